"""The P4Runtime server over gRPC (p4switch/p4runtime/server.py): its port, the compiled front end against
grpcio's, many streams and dead controllers, and the real p4runtime-shell end to end (shell_client.py,
shell_profiles_client.py and stream_flood_client.py are run as subprocesses).
"""
