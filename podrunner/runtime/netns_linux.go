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
// namespace, then moves the thread back. An error of enter means fn did not run. If switching
// back fails the thread stays locked and the Go runtime discards it when the goroutine ends, so
// no other goroutine ever runs in the other namespace. (Never simply discarding the thread: when
// it is the process's main thread Go keeps it parked instead, which would keep the namespace
// alive and make /proc/self/ns/net name it.)
func inOtherNetns(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := enter(); err != nil {
			goruntime.UnlockOSThread()
			errc <- err
			return
		}
		fnErr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("return to own network namespace: %w", err)
			return
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
