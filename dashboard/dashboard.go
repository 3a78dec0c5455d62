// Package dashboard is the web page every swarm node serves at GET /: the
// swarm as the node sees it (per-model block coverage colored by headroom,
// the server table, the proxy's request counters, the planner's committed
// plan), drawn in the browser from the node's GET /api/v1/state document
// (ingress.State), polled every 2 s. The page is plain HTML, CSS and
// JavaScript embedded in the binary: no build step, nothing fetched from
// elsewhere (no CDN), so it works on a machine without internet access.
//
// dashboard must never import other packages of this repository: it only
// serves files, and the document's shape is the JSON of ingress.State.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// AssetsPrefix is the path under which the page's scripts and styles are
// served (GET /dashboard/app.js, /dashboard/style.css).
const AssetsPrefix = "/dashboard/"

// StatePath is the JSON document the page polls.
const StatePath = "/api/v1/state"

//go:embed static
var static embed.FS

// Mount serves the page on mux: GET / (exactly) and GET AssetsPrefix...
// The node mounts its StatePath handler itself.
func Mount(mux *http.ServeMux) {
	sub, _ := fs.Sub(static, "static") // a constant directory of the embedded tree
	files := http.FileServerFS(sub)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET "+AssetsPrefix, http.StripPrefix(AssetsPrefix[:len(AssetsPrefix)-1], files))
}

// IsPage reports whether path is one of the page's own paths (/ and
// AssetsPrefix...), for a node that routes by path before its mux.
func IsPage(path string) bool {
	return path == "/" || len(path) > len(AssetsPrefix) && path[:len(AssetsPrefix)] == AssetsPrefix
}
