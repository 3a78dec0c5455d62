package registry

import (
	"context"
	"sync"
)

// watcher is one Watch subscription: an unbounded queue drained into out by
// a pump goroutine, so that a slow reader never blocks the registry.
type watcher struct {
	mu          sync.Mutex // guards queueLocked
	queueLocked []Event
	wake        chan struct{} // buffered 1: the queue is non-empty
	out         chan Event
}

func (w *watcher) push(ev Event) {
	w.mu.Lock()
	w.queueLocked = append(w.queueLocked, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) take() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queueLocked
	w.queueLocked = nil
	return q
}

// Watch returns a channel of the changes to the replica from now on (new
// entries, newer versions, effective-state changes, removals), in order. The
// channel is closed when ctx is done or the registry is closed. Events queue
// without bound until read: keep reading, or cancel ctx.
func (r *Registry) Watch(ctx context.Context) <-chan Event {
	w := &watcher{wake: make(chan struct{}, 1), out: make(chan Event)}
	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		close(w.out)
		return w.out
	}
	r.watchersLocked[w] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.pump(ctx, w)
	return w.out
}

// pump delivers a watcher's queued events until ctx or the registry ends.
func (r *Registry) pump(ctx context.Context, w *watcher) {
	defer r.wg.Done()
	defer close(w.out)
	defer func() {
		r.mu.Lock()
		delete(r.watchersLocked, w)
		r.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.ctx.Done():
			return
		case <-w.wake:
		}
		for _, ev := range w.take() {
			select {
			case w.out <- ev:
			case <-ctx.Done():
				return
			case <-r.ctx.Done():
				return
			}
		}
	}
}

// Changed returns a channel that is closed at the next change of the
// replica (any event Watch would report): a broadcast for readers that only
// need to look again (Get, Snapshot), with no goroutine or queue. Take the
// channel before reading the state it guards, so no change is missed.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changedLocked
}
