"""The Wireshark dissectors (wireshark/*.lua) under Debian's tshark: every field of the ALINEA reports and
the hosts' datagrams and feedback decodes to the value encoded, also on the pcaps a short netns run
writes.
"""
