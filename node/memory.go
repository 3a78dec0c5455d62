package node

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DefaultMemoryFraction is the share of the machine's available memory
// that `swarm serve --blocks auto` takes as M_j when --memory is not given:
// half, leaving room for the operating system, the page cache and other
// processes (the span's weights plus R attention caches must fit in M_j,
// paper 003 eq. 2).
const DefaultMemoryFraction = 0.5

// AvailableMemory returns the memory available to new processes, in bytes:
// MemAvailable of /proc/meminfo (Linux; the kernel's estimate of memory
// usable without swapping). It returns an error elsewhere or when the line
// is missing.
func AvailableMemory() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("node: available memory: %w (pass --memory BYTES)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "MemAvailable:   12345678 kB" (proc(5)).
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			break
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("node: available memory: read /proc/meminfo: %w (pass --memory BYTES)", err)
	}
	return 0, fmt.Errorf("node: available memory: no MemAvailable line in /proc/meminfo (pass --memory BYTES)")
}

// DefaultMemory returns DefaultMemoryFraction of AvailableMemory, in bytes.
func DefaultMemory() (int64, error) {
	avail, err := AvailableMemory()
	if err != nil {
		return 0, err
	}
	return int64(float64(avail) * DefaultMemoryFraction), nil
}
