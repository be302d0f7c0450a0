// Command pkbench is podkeeper's benchmark (`make bench`): it starts its own containerd, runs the
// podkeeper agent built from this tree and, side by side in the same run, the floor (the same
// busybox sleepers started straight through containerd: the Go client doing create+start, and
// `ctr run -d`), then prints a table and writes docs/benchmarks.md.
//
// BENCH_QUICK=1 (or -quick) is a small mode for development: fewer runs, smaller batches, a
// 10 s CPU window.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podkeeper/podkeeper/internal/testenv"
)

type options struct {
	quick     bool
	runs      int           // single-pod start runs per runner
	sizes     []int         // batch sizes for scaling; the footprint is taken at footprintAt
	footprint int           // batch size of the footprint and reaction sections
	window    time.Duration // idle CPU window
	kills     int           // reaction samples
	liveKills int           // liveness failure samples
	out       string
	kubelet   string // kubelet binary
	conform   bool   // run the differential check against the kubelet instead of the benchmark
	settle    time.Duration
	peers     bool   // also run podman and the real kubelet
	only      string // run only this section ("probes"); empty: all
	scenarios string // conformance: only these scenarios (comma separated); empty: all
	manifests string // conformance: write the (picked) scenarios' manifests here and stop
}

func parseOptions() options {
	o := options{}
	quick := os.Getenv("BENCH_QUICK") != "" && os.Getenv("BENCH_QUICK") != "0"
	flag.BoolVar(&o.quick, "quick", quick, "small mode for development (also BENCH_QUICK=1)")
	runs := flag.Int("runs", 0, "single-pod start runs per runner (default 50, quick 8)")
	sizes := flag.String("sizes", "", "batch sizes, comma separated (default 10,110,300; quick 5,20)")
	window := flag.Duration("window", 0, "idle CPU window (default 60s, quick 10s)")
	kills := flag.Int("kills", 0, "container kills for the reaction figure (default 30, quick 5)")
	flag.StringVar(&o.kubelet, "kubelet", "/var/cache/podkeeper-bench/kubelet", "the real kubelet's binary (built from bench/kubelet)")
	flag.BoolVar(&o.conform, "conformance", false, "run the differential check against the real kubelet (make conformance) instead of the benchmark")
	flag.DurationVar(&o.settle, "settle", 40*time.Second, "conformance: sample both every second for this long after the manifests are written")
	flag.BoolVar(&o.peers, "peers", true, "also run the peers (podman kube play, the real kubelet); false for a focused run of podkeeper against the floor")
	flag.StringVar(&o.scenarios, "scenarios", "", "conformance: run only these scenarios (comma separated) and print both statuses in full, for a focused look; use with -out ''")
	flag.StringVar(&o.manifests, "manifests", "", "conformance: only write the scenarios' manifests (those of -scenarios, else all) into this directory, to read or validate them")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "markdown report to write (empty: none)")
	flag.StringVar(&o.only, "only", "", "run only this section for a focused look (\"start\": the single-pod starts of section 1; \"batches\": sections 1-5 for -sizes, without single-pod starts; \"probes\": section 6 and the liveness rows); use with -out ''")
	flag.Parse()
	o.runs, o.window, o.kills, o.liveKills = 50, 60*time.Second, 30, 10
	o.sizes = []int{10, 110, 300}
	o.footprint = 110
	if o.quick {
		o.runs, o.window, o.kills, o.liveKills = 8, 10*time.Second, 5, 3
		o.sizes = []int{5, 20}
		o.footprint = 20
	}
	if *runs > 0 {
		o.runs = *runs
	}
	if o.only != "" && o.only != "probes" && o.only != "start" && o.only != "batches" {
		log.Fatalf("-only %q: the sections that run alone are \"start\", \"batches\" and \"probes\"", o.only)
	}
	if *window > 0 {
		o.window = *window
	}
	if *kills > 0 {
		o.kills = *kills
	}
	if *sizes != "" {
		o.sizes = nil
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				log.Fatalf("-sizes %q: %v", *sizes, err)
			}
			o.sizes = append(o.sizes, n)
		}
		o.footprint = o.sizes[len(o.sizes)-1]
		for _, n := range o.sizes {
			if n == 110 {
				o.footprint = 110
			}
		}
	}
	return o
}

// runner is one way of running the benchmark's pods.
type runner interface {
	Name() string
	// StartBatch starts pods [first, first+n) at once and returns the time until all of them
	// (and every pod already started) run.
	StartBatch(ctx context.Context, first, n int) (time.Duration, error)
	// RemoveAll removes every pod it runs and returns the time until all are gone.
	RemoveAll(ctx context.Context) (time.Duration, error)
	AgentPIDs() []int // the runner's own long-lived processes (none for the floor)
	ShimPIDs() []int  // the containerd shims serving its containers
	Close()
}

func main() {
	log.SetFlags(log.Ltime)
	if len(os.Args) == 3 && os.Args[1] == grpcHealthCommand {
		if err := grpcHealthServer(os.Args[2]); err != nil {
			log.Fatal(err)
		}
		return
	}
	o := parseOptions()
	// SIGINT/SIGTERM end the run through its clean-up: every runner removes its pods the way it
	// normally does (CNI DEL included), containerd is stopped. Killed without it, the pods' IPs
	// and iptables rules would stay behind. A second signal is ignored while cleaning up.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Printf("%v: removing every runner's pods, then stopping", s)
		cancel()
	}()
	var err error
	if o.conform {
		err = runConformance(ctx, o, o.settle)
	} else {
		err = run(ctx, o)
	}
	cancel()
	if err != nil {
		log.Fatal(err)
	}
}

// pause sleeps for d, or returns ctx's error at once when it is (or becomes) done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

func run(ctx context.Context, o options) error {
	m := describeMachine()
	log.Printf("machine: %s", m)
	binDir, err := testenv.Binaries()
	if err != nil {
		return err
	}
	defer testenv.RemoveBinaries()
	env, err := testenv.StartContainerd("pkbench-floor")
	if err != nil {
		return err
	}
	defer env.Stop()
	if err := env.ImportBusybox("pkbench-ctr"); err != nil {
		return err
	}
	r := &results{opts: o, machine: m}
	if f := os.Getenv("PKBENCH_AGENT_FLAGS"); f != "" {
		r.notes = append(r.notes, "podkeeper ran with PKBENCH_AGENT_FLAGS="+f)
	}
	ctrdPID := env.PID()
	r.containerdIdle = memOf(ctrdPID)

	pk, err := newPodkeeper(ctx, binDir, env.Address, "pkbench", filepath.Join(env.Dir, "busybox.tar"))
	if err != nil {
		return err
	}
	defer pk.Close()
	pk.ctrdPID = ctrdPID
	floor, err := newFloor(env.Address, "pkbench-floor", false)
	if err != nil {
		return err
	}
	defer floor.Close()
	runners := []runner{pk, floor}
	if _, err := exec.LookPath("ctr"); err == nil {
		ctr, err := newFloor(env.Address, "pkbench-ctr", true)
		if err != nil {
			return err
		}
		defer ctr.Close()
		runners = append(runners, ctr)
	} else {
		r.notes = append(r.notes, "`ctr` is not installed: no `ctr run -d` column")
	}
	if !o.peers {
		r.notes = append(r.notes, "run with -peers=false: no podman or kubelet columns")
	} else {
		if pm, err := newPodman(ctx, filepath.Join(env.Dir, "busybox.tar")); err != nil {
			r.peers = append(r.peers, peer{"podman kube play", err.Error()})
		} else {
			defer pm.Close()
			runners = append(runners, pm)
		}
		if kb, err := newKubelet(ctx, o.kubelet, filepath.Join(env.Dir, "busybox.tar")); err != nil {
			r.peers = append(r.peers, peer{"kubelet (standalone)", err.Error()})
		} else {
			defer kb.Close()
			runners = append(runners, kb)
		}
	}
	time.Sleep(2 * time.Second)
	r.agentIdle = memOf(pk.cmd.Process.Pid)

	// 1. One pod at a time, the runners interleaved so that they share the machine's load.
	r.single = map[string]sample{}
	r.singleDown = map[string]sample{}
	r.singleQuiet = map[string]sample{}
	switch o.only {
	case "start":
		o.sizes = nil
	case "batches":
		o.runs = 0
	case "probes":
		o.runs, o.sizes = 0, nil
	}
	log.Printf("single pod start, %d runs per runner", o.runs)
	for i := 0; i < o.runs; i++ {
		for _, rn := range runners {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("interrupted: %w", err)
			}
			d, err := rn.StartBatch(ctx, 100000+i, 1)
			if err != nil {
				return fmt.Errorf("%s: %w", rn.Name(), err)
			}
			r.single[rn.Name()] = append(r.single[rn.Name()], d)
			d, err = rn.RemoveAll(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", rn.Name(), err)
			}
			r.singleDown[rn.Name()] = append(r.singleDown[rn.Name()], d)
			q, err := waitQuiet(ctx, quietMax) // (quiet.go)
			if err != nil {
				return fmt.Errorf("waiting for a quiet machine: %w", err)
			}
			r.singleQuiet[rn.Name()] = append(r.singleQuiet[rn.Name()], q)
		}
	}

	r.writePartial(o)

	// 2-5. Batches: start all at once, footprint and reaction at the footprint size, teardown.
	for _, n := range o.sizes {
		for _, rn := range runners {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("interrupted: %w", err)
			}
			q, err := waitQuiet(ctx, quietBatch)
			if err != nil {
				return fmt.Errorf("waiting for a quiet machine: %w", err)
			}
			log.Printf("%s: %d pods at once (after %v waiting for a quiet machine)", rn.Name(), n, q.Round(time.Millisecond))
			d, err := rn.StartBatch(ctx, 0, n)
			if err != nil {
				return fmt.Errorf("%s: %w", rn.Name(), err)
			}
			b := batch{runner: rn.Name(), n: n, start: d}
			if err := pause(ctx, 3*time.Second); err != nil { // let the start settle before reading memory
				return err
			}
			b.agent = sumMem(rn.AgentPIDs())
			shims := rn.ShimPIDs()
			b.shims, b.shimMem = len(shims), sumMem(shims)
			cpid := ctrdPID
			if own, ok := rn.(interface{ ContainerdPID() int }); ok {
				cpid = own.ContainerdPID()
			}
			b.containerd = memOf(cpid)
			if n == o.footprint && rn != runner(ctrOnly(runners)) {
				log.Printf("%s: idle CPU over %v", rn.Name(), o.window)
				if b.cpu, err = measureCPU(ctx, o.window, rn.AgentPIDs(), shims, cpid); err != nil {
					return err
				}
				b.agentAfter = sumMem(rn.AgentPIDs())
				if rn == runner(pk) {
					log.Printf("podkeeper: reaction, %d kills", o.kills)
					r.reaction, err = measureReaction(ctx, pk, o.kills)
					if err != nil {
						return err
					}
				}
				if kb, ok := rn.(*kubeletRunner); ok {
					log.Printf("kubelet: reaction, %d kills", o.kills)
					if r.kubeletReaction, err = measureKubeletReaction(ctx, kb, o.kills); err != nil {
						r.notes = append(r.notes, "kubelet reaction not measured: "+err.Error())
					}
				}
			}
			if b.down, err = rn.RemoveAll(ctx); err != nil {
				return fmt.Errorf("%s: %w", rn.Name(), err)
			}
			r.batches = append(r.batches, b)
			r.writePartial(o)
		}
	}
	// 6. Probes: podkeeper and the kubelet probing the same pods.
	for i, rn := range runners {
		if o.only == "start" || o.only == "batches" {
			break
		}
		if t, ok := rn.(probeTarget); ok {
			if err := settle(ctx, 2*time.Minute); err != nil {
				return err
			}
			r.probes = append(r.probes, measureProbes(ctx, t, o.footprint, o.liveKills, 21000+i*1000, o.window))
			r.writePartial(o)
		}
	}
	r.finished = time.Now()
	r.loadEnd = loadAvg()
	report := r.markdown()
	fmt.Println(report)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
			return err
		}
		log.Printf("wrote %s", o.out)
		os.Remove(o.out + ".partial")
	}
	return nil
}

// ctrOnly returns the `ctr run -d` runner, whose footprint equals the client floor's.
func ctrOnly(rs []runner) runner {
	for _, r := range rs {
		if f, ok := r.(*floorRunner); ok && f.useCtr {
			return f
		}
	}
	return nil
}

type cpuUse struct {
	window                  time.Duration
	agent, shims, container float64 // cores
}

func measureCPU(ctx context.Context, w time.Duration, agent, shims []int, ctrd int) (cpuUse, error) {
	a0, s0, c0 := sumTicks(agent), sumTicks(shims), cpuTicks(ctrd)
	t0 := time.Now()
	if err := pause(ctx, w); err != nil {
		return cpuUse{}, err
	}
	el := time.Since(t0).Seconds()
	f := func(d int64) float64 { return float64(d) / clockTicks / el }
	return cpuUse{window: w, agent: f(sumTicks(agent) - a0), shims: f(sumTicks(shims) - s0), container: f(cpuTicks(ctrd) - c0)}, nil
}

// settle waits until the machine's 1-minute load average is below its CPU count (the previous
// phase's clean-up, such as the kubelet's container garbage collection or podman's cleanup
// processes, has died down), at most max.
func settle(ctx context.Context, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		if f := loadFields(); len(f) > 0 {
			if l, err := strconv.ParseFloat(f[0], 64); err == nil && l < float64(runtime.NumCPU()) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			log.Printf("load average still %s after %v; going on", loadAvg(), max)
			return nil
		}
		if err := pause(ctx, 5*time.Second); err != nil {
			return err
		}
	}
}

// loadFields are /proc/loadavg's fields (the 1, 5 and 15 minute load averages first); none
// when it cannot be read.
func loadFields() []string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Fields(string(b))
}

func loadAvg() string {
	f := loadFields()
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writePartial writes the report so far (to <out>.partial), so that a run cut short keeps
// what it measured.
func (r *results) writePartial(o options) {
	if o.out == "" {
		return
	}
	r.finished = time.Now()
	r.loadEnd = loadAvg()
	_ = os.WriteFile(o.out+".partial", []byte(r.markdown()), 0o644)
}
