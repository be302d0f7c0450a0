package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcHealthCommand is the argument that turns pkbench into a gRPC health server, for the
// conformance check's gRPC probe scenarios: busybox has no gRPC server, so the scenario's
// container runs this (static) binary, mounted from the host by a hostPath volume.
const grpcHealthCommand = "grpc-health-server"

// grpcHealthServer serves grpc.health.v1 on addr: the overall service ("") is SERVING and the
// service "db" is NOT_SERVING, so one server answers both a passing and a failing probe. It
// returns when SIGTERM or SIGINT arrives.
func grpcHealthServer(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("grpc health server: %w", err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sigs
		srv.Stop()
	}()
	return srv.Serve(l)
}
