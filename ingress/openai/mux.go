package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// methods are those JSONErrors tries when a path matches no pattern for
// the request's method, to tell 405 from 404.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// JSONErrors returns mux answering a request that none of its patterns
// match in OpenAI's error JSON, as this API's own routes do: 405
// method_not_allowed with an Allow header when the path serves other
// methods, else 404 unknown_url, instead of ServeMux's plain-text pages.
// Matched requests go to mux unchanged.
func JSONErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range methods {
			other := *r
			other.Method = m
			if _, pattern := mux.Handler(&other); pattern != "" && m != r.Method {
				allow = append(allow, m)
			}
		}
		err := fmt.Errorf("%w: %s %s is not an endpoint of this server", ErrNotFound, r.Method, r.URL.Path)
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			err = fmt.Errorf("%w: %s %s (this endpoint serves %s)", ErrMethodNotAllowed, r.Method, r.URL.Path, strings.Join(allow, ", "))
		}
		status, d := apiError(err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(ErrorBody{Error: d})
	})
}
