// Package probes runs the startup, liveness and readiness probes of running containers, as the
// kubelet does: one worker goroutine per container probe, handlers for exec (inside the container,
// through an Execer), httpGet, tcpSocket and grpc (run from the host against the pod IP or the
// probe's host), and threshold logic (Machine, pure: the caller passes the time in).
//
// The Manager keeps the current result of every probe and sends an Update on its channel only
// when a result changes. Its users (podrunner) read results with Status and Failed, and start and
// stop probing with Start and StopPod.
//
//	           Start(container)                  result changes
//	podrunner ─────────────────▶ Manager ──▶ worker per probe ──▶ Updates() ──▶ podrunner
//	           StopPod / Stop        ▲                                 (wake the pod's worker)
//	                                 └── Status(id) / Failed(id): the current results
package probes
