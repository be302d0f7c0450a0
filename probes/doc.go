// Package probes will hold podkeeper's probe workers (exec, httpGet, tcpSocket, grpc) with
// results that change only on change. Until the probes issue lands, a running container counts
// as ready (see podrunner.BuildStatus).
package probes
