// An empty P4Runtime server in Go: the ceiling of Write throughput for a compiled server.
//
//	go build -o p4rt-floor-go . && ./p4rt-floor-go --port N
//
// Why: tests/bench/p4rt_floor.py is the same server on grpcio (Python), the ceiling of any
// server built on grpcio; this one shows what the Python client reaches against a server
// whose gRPC runtime costs next to nothing, as simple_switch_grpc's C++ one. Every
// arbitration is granted, every Write answered at once (decoded by protobuf-go, not applied).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
)

type server struct {
	p4.UnimplementedP4RuntimeServer
}

func (*server) Write(context.Context, *p4.WriteRequest) (*p4.WriteResponse, error) {
	return &p4.WriteResponse{}, nil
}

func (*server) StreamChannel(stream p4.P4Runtime_StreamChannelServer) error {
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil // the client closed the stream or went away
		}
		if arb := msg.GetArbitration(); arb != nil {
			granted := &p4.MasterArbitrationUpdate{DeviceId: arb.DeviceId, ElectionId: arb.ElectionId,
				Status: &status.Status{Code: 0}}
			if err := stream.Send(&p4.StreamMessageResponse{
				Update: &p4.StreamMessageResponse_Arbitration{Arbitration: granted}}); err != nil {
				return err
			}
		}
	}
}

func main() {
	port := flag.Int("port", 0, "TCP port on 127.0.0.1")
	flag.Parse()
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "p4rt-floor-go:", err)
		os.Exit(2)
	}
	srv := grpc.NewServer()
	p4.RegisterP4RuntimeServer(srv, &server{})
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "p4rt-floor-go:", err)
		os.Exit(1)
	}
}
