// Package supervise runs a group of child processes for a parent that
// must never leave them behind (`swarm demo`'s servers): each child is
// started from one locked OS thread so that Linux's parent-death signal
// kills it if the parent dies, in its own process group so that a
// terminal's Ctrl-C reaches only the parent; the parent waits for each
// child's first stdout lines (its "ready" lines), copies its stderr line
// by line with a prefix, and stops the whole group with SIGTERM, then
// SIGKILL after a grace period.
//
// This package must never import any package of this repository: it knows
// processes, not swarm.
package supervise
