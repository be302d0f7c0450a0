// Package crilog writes and reads container logs in the Kubernetes CRI log
// format.
//
// Each container's stdout and stderr are stored in one file, one line per
// chunk of output:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F> <text>\n
//
// The tag F marks a chunk that ends a line (the line end, "\n" or "\r\n", is
// not part of the text, as in the files containerd's CRI writes); P marks a partial chunk, written when a line is longer than
// MaxLineSize or when a stream is closed without a final newline.
//
// A Writer appends to the live file and rotates it by size: the live file
// "<path>" is renamed to "<path>.<YYYYMMDD-HHMMSS.ffffff>" (a UTC timestamp,
// so the names sort oldest to newest) and a new live file is created. ReadLog
// reads the rotated files and the live file in order, reassembles partial
// chunks into the lines the container printed, and can follow the live file
// across rotations.
package crilog
