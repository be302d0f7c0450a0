package runtime

import (
	"fmt"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// loopbackUp sets the loopback interface up inside the network namespace of process pid. A new
// network namespace starts with lo down; the kubelet's CNI loopback plugin does the same job.
//
// It switches one locked OS thread into the namespace and back. If switching back fails the thread
// stays locked and the Go runtime discards it when this goroutine ends, so no other goroutine ever
// runs in the pod's namespace.
func loopbackUp(pid uint32) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("open netns of pid %d: %w", pid, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns of pid %d: %w", pid, err)
			return
		}
		upErr := setLinkUp("lo")
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("return to own netns: %w", err)
			return
		}
		goruntime.UnlockOSThread()
		errc <- upErr
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
