package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrBadOrigin marks a --cors-origins entry that is neither "*" nor an
// origin (scheme://host[:port], no path).
var ErrBadOrigin = errors.New("openai: bad CORS origin")

// corsMaxAge is how long, in seconds, a browser may cache a preflight
// answer.
const corsMaxAge = "86400"

// CORS returns next answering cross-origin requests from the given origins
// (https://fetch.spec.whatwg.org/#http-cors-protocol) so that browser apps
// can call the API: "*" allows any origin; none leaves next as it is. A
// preflight (OPTIONS with Origin and Access-Control-Request-Method) is
// answered here with 204, allowing GET, POST and OPTIONS and the headers
// the browser asks for (the openai npm client sends its own x-stainless-*
// ones); other requests from an allowed origin get
// Access-Control-Allow-Origin and the exposed X-Swarm-Route before next
// writes, so streamed answers carry them too. Errors wrap ErrBadOrigin.
func CORS(origins []string, next http.Handler) (http.Handler, error) {
	if len(origins) == 0 {
		return next, nil
	}
	allowed := map[string]bool{}
	for _, o := range origins {
		o = strings.TrimSpace(o)
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				return nil, fmt.Errorf("%w: %q, want * or scheme://host[:port]", ErrBadOrigin, o)
			}
			o = u.Scheme + "://" + u.Host
		}
		allowed[o] = true
	}
	anyOrigin := allowed["*"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		ok := anyOrigin || allowed[origin]
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
		}
		if ok {
			if anyOrigin {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", origin)
			}
		}
		if !preflight {
			if ok {
				h.Set("Access-Control-Expose-Headers", RouteHeader)
			}
			next.ServeHTTP(w, r)
			return
		}
		if ok {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", corsMaxAge)
		}
		w.WriteHeader(http.StatusNoContent) // without the headers, the browser refuses
	}), nil
}
