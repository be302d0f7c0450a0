package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

// startMetrics serves /metrics, /healthz and /readyz on addr (nothing when addr is empty).
// Ready means the manager applied the first snapshot of the manifest directory.
func startMetrics(ctx context.Context, addr string, b *lateBackend, wg *sync.WaitGroup, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	if err := metrics.Registry.Register(metrics.NewPodCollector(b.Pods)); err != nil {
		return err
	}
	serve, bound, err := metrics.Listen(addr, func() error {
		m := b.get()
		if m == nil {
			return errors.New("waiting for containerd")
		}
		select {
		case <-m.Ready():
			return nil
		default:
			return errors.New("waiting for the first manifest snapshot")
		}
	})
	if err != nil {
		return err
	}
	log.Info("metrics listening", "address", bound.String())
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := serve(ctx); err != nil {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	return nil
}
