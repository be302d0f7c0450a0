package runtime

import "time"

// SetHalfDeletedMinAge sets halfDeletedMinAge for a test and returns the restore.
func SetHalfDeletedMinAge(d time.Duration) (restore func()) {
	old := halfDeletedMinAge
	halfDeletedMinAge = d
	return func() { halfDeletedMinAge = old }
}

// CNICacheDir is libcni's result cache, where tests read what a CNI ADD ran.
const CNICacheDir = cniCacheDir

// SetCNITimeout sets cniTimeout for a test and returns the restore.
func SetCNITimeout(d time.Duration) (restore func()) {
	old := cniTimeout
	cniTimeout = d
	return func() { cniTimeout = old }
}
