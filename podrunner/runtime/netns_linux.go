package runtime

import (
	"fmt"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// loopbackUp sets the loopback interface up inside the network namespace of process pid. A new
// network namespace starts with lo down; the kubelet's CNI loopback plugin does the same job.
func loopbackUp(pid uint32) error {
	return inOtherNetns(func() error {
		target, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open netns of pid %d: %w", pid, err)
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter netns of pid %d: %w", pid, err)
		}
		return nil
	}, func() error { return setLinkUp("lo") })
}

// inOtherNetns runs fn on one locked OS thread that enter has moved into another network
// namespace, then moves the thread back (see inOtherNamespaces).
func inOtherNetns(enter, fn func() error) error {
	return inOtherNamespaces([]string{"net"}, enter, fn)
}

// nsFlags are the clone flags of the namespace kinds a thread may enter and leave on its own.
var nsFlags = map[string]int{"net": unix.CLONE_NEWNET, "uts": unix.CLONE_NEWUTS, "ipc": unix.CLONE_NEWIPC}

// inOtherNamespaces runs fn on one locked OS thread that enter has moved into other namespaces
// of the kinds named (as in /proc/<pid>/ns: "net", "uts", "ipc"), then moves the thread back to
// its own. An error of enter means fn did not run. If switching back fails the thread stays
// locked and the Go runtime discards it when the goroutine ends, so no other goroutine ever runs
// in another namespace. (Never simply discarding the thread: when it is the process's main thread
// Go keeps it parked instead, which would keep the namespace alive and make /proc/self/ns/...
// name it.)
func inOtherNamespaces(kinds []string, enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		var origs []int
		defer func() {
			for _, fd := range origs {
				unix.Close(fd)
			}
		}()
		for _, k := range kinds {
			fd, err := unix.Open("/proc/thread-self/ns/"+k, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				goruntime.UnlockOSThread()
				errc <- fmt.Errorf("open own %s namespace: %w", k, err)
				return
			}
			origs = append(origs, fd)
		}
		if enterErr := enter(); enterErr != nil {
			// enter may have moved the thread part of the way: back to where it was.
			for i, k := range kinds {
				if err := unix.Setns(origs[i], nsFlags[k]); err != nil {
					errc <- fmt.Errorf("return to own %s namespace: %w (after: %w)", k, err, enterErr)
					return
				}
			}
			goruntime.UnlockOSThread()
			errc <- enterErr
			return
		}
		fnErr := fn()
		for i, k := range kinds {
			if err := unix.Setns(origs[i], nsFlags[k]); err != nil {
				// Leave the thread locked: it dies with this goroutine.
				errc <- fmt.Errorf("return to own %s namespace: %w", k, err)
				return
			}
		}
		goruntime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// setLinkUp raises IFF_UP on the named interface of the current thread's network namespace.
func setLinkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get flags of %s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}
