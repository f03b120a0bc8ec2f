package memstore

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGuardedParallelFault: a worker of Open's parallel decoding that reads
// a mapped page the file no longer holds (another process truncated it)
// gets SIGBUS; the fault must come back as a *CorruptError naming the file,
// not end the process. Before guardedParallel, the workers ran outside the
// caller's guard (SetPanicOnFault is per goroutine) and this test crashed
// the test binary.
func TestGuardedParallelFault(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two workers")
	}
	const page = 4096
	path := filepath.Join(t.TempDir(), "mapped")
	require.NoError(t, os.WriteFile(path, make([]byte, 64*page), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, 64*page, syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.NoError(t, os.Truncate(path, page)) // pages 1..63 are gone

	sums := make([]byte, 64)
	err = guardedParallel(path, 64, 1, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			sums[i] = mem[i*page] // page 0 reads; any later page faults
		}
		return nil
	})
	var ce *CorruptError
	require.True(t, errors.As(err, &ce), "want a *CorruptError, got %v", err)
	require.Equal(t, path, ce.File)
}
