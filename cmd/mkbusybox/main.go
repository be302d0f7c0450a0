// Command mkbusybox writes a tiny OCI image layout tarball built from a static
// busybox binary, suitable for `ctr images import` or podkeeper's auto-import
// directory.
//
// Usage:
//
//	mkbusybox [-name docker.io/library/busybox:latest] [-busybox /bin/busybox] -o OUT.tar
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/podkeeper/podkeeper/internal/ociimage"
)

func main() {
	name := flag.String("name", ociimage.DefaultName, "image reference stored in the index annotations")
	busybox := flag.String("busybox", ociimage.DefaultBusybox, "path to a static busybox binary")
	out := flag.String("o", "", "output tarball path (required; parent directories are created)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-name REF] [-busybox PATH] -o OUT.tar\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := ociimage.Config{Name: *name, Busybox: *busybox}
	if err := ociimage.WriteBusyboxImageFile(*out, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "mkbusybox:", err)
		os.Exit(1)
	}
}
