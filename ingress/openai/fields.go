package openai

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// ignorable are request fields of OpenAI's API that change nothing in what
// is generated, so serving without them is honest: service tier and
// caching hints, an end-user identifier for abuse monitoring, and metadata
// (which OpenAI keeps only with store: true, refused here).
var ignorable = map[string]bool{"service_tier": true, "safety_identifier": true, "prompt_cache_key": true, "metadata": true}

// fieldNames caches the JSON names of each request type's fields.
var fieldNames sync.Map // reflect.Type -> map[string]bool

// names returns the JSON field names of struct type t, embedded structs'
// included.
func names(t reflect.Type) map[string]bool {
	if m, ok := fieldNames.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k := range names(f.Type) {
				m[k] = true
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	fieldNames.Store(t, m)
	return m
}

// unknownFields refuses a body (decoded into v, a pointer to a request
// struct) that sets a field this API does not know, as OpenAI answers
// "Unrecognized request argument supplied": a request is never served
// without what it asked for. The ignorable fields and "store": false are
// accepted. The first unknown field (by name) is named.
func unknownFields(body []byte, v any) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("%w: the body is not a JSON object: %w", ErrBadRequest, err)
	}
	known := names(reflect.TypeOf(v).Elem())
	var unknown []string
	for k, val := range raw {
		switch {
		case known[k], ignorable[k]:
		case k == "store":
			if s := strings.TrimSpace(string(val)); s != "false" && s != "null" {
				return unsupported("store", "stored completions are not kept (only store: false)")
			}
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return unsupported(unknown[0], "unrecognized request argument (this API does not implement it)")
}
