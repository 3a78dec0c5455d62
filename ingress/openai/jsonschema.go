package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// ErrSchema marks a response_format json_schema this API cannot constrain
// decoding to: a keyword it does not implement, a malformed schema, or one
// that no finite document satisfies.
var ErrSchema = errors.New("openai: unsupported JSON schema")

// kind is what a grammar node reads.
type kind uint8

const (
	kString  kind = iota // any JSON string
	kNumber              // any JSON number
	kInteger             // -?(0|[1-9][0-9]*)
	kLits                // one of a set of fixed JSON texts (enum, const, true/false, null)
	kArray               // [items, ...] with minItems..maxItems items
	kObject              // the declared properties, in declared order
	kFreeObj             // any keys, each value val
	kUnion               // one of alts, told apart by the first byte
)

// node is one compiled schema: the language of JSON texts it accepts, a
// subset of the documents the schema validates (properties are written in
// their declared order, undeclared ones never, and no whitespace between
// tokens), with minLen the length in bytes of its shortest text.
type node struct {
	kind kind
	// lits are the texts of kLits (at most 64, compact JSON).
	lits []string
	// items, minItems, maxItems (-1: no bound) describe kArray.
	items              *node
	minItems, maxItems int
	// props are kObject's properties in declared order.
	props []prop
	// val is the value of kFreeObj's properties.
	val *node
	// alts maps a first byte to the node a kUnion text continues as.
	alts map[byte]*node
	// ref is a $ref not yet resolved (compile time only).
	ref string
	// minLen is the length in bytes of the shortest accepted text;
	// reqAfter[i+1] (kObject) the bytes of the required properties after
	// property i, each with its comma, plus the closing brace.
	minLen   int
	reqAfter []int
}

// prop is one declared property: key is its name as JSON followed by ':'.
type prop struct {
	key      string
	val      *node
	required bool
}

// inf is the length of a text that does not exist.
const inf = math.MaxInt32 / 4

// maxAlternatives bounds enum values and declared properties of one
// object (the recognizer keeps candidates in a 64-bit set).
const maxAlternatives = 64

// annotations are schema keywords that do not constrain the text.
var annotations = map[string]bool{"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, "additionalProperties": true, "strict": true}

// compiler turns a schema into nodes.
type compiler struct {
	root   map[string]any
	strict bool
	order  map[string][]string // key order of the objects by path (decodeSchema)
	defs   map[string]*node    // resolved $refs, and "\x00any"
	all    []*node
}

// compileSchema compiles a JSON schema (its JSON text) to the grammar
// that decoding follows. Supported: type (one or several of object,
// array, string, number, integer, boolean, null), properties with required
// (written in declared order; additionalProperties is treated as false
// whenever properties are declared, and by default in strict mode: an
// object without properties is then "{}"), items with minItems/maxItems,
// enum and const (any JSON values, at most 64), anyOf/oneOf of branches
// that start with different characters (e.g. a type and null), and $ref
// to "#", "#/$defs/NAME" or "#/definitions/NAME" (recursion allowed).
// Annotations (title, description, default, examples...) are ignored.
// Errors wrap ErrSchema naming the keyword and where it is (a JSON
// pointer from "#").
func compileSchema(raw []byte, strict bool) (*node, error) {
	schema, order, err := decodeSchema(raw)
	if err != nil {
		return nil, err
	}
	root, ok := schema.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the schema is %s, want an object", ErrSchema, jsonType(schema))
	}
	c := &compiler{root: root, strict: strict, order: order, defs: map[string]*node{}}
	n, err := c.compile(root, "#")
	if err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	c.lengths()
	if n = deref(n); n.minLen >= inf {
		return nil, fmt.Errorf("%w: no finite JSON document satisfies the schema (a required property or item refers back to itself)", ErrSchema)
	}
	return n, nil
}

func (c *compiler) add(n *node) *node {
	c.all = append(c.all, n)
	return n
}

func (c *compiler) compile(v any, at string) (*node, error) {
	s, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && b {
			return c.any(), nil
		}
		return nil, fmt.Errorf("%w: %s is %s, want a schema object", ErrSchema, at, jsonType(v))
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "type", "properties", "required", "items", "minItems", "maxItems", "enum", "const", "anyOf", "oneOf", "$ref":
		default:
			if !annotations[k] {
				return nil, fmt.Errorf("%w: keyword %q at %s is not supported (supported: type, properties, required, additionalProperties, items, minItems, maxItems, enum, const, anyOf, oneOf, $ref, $defs)", ErrSchema, k, at)
			}
		}
	}
	if ref, ok := s["$ref"]; ok {
		r, isStr := ref.(string)
		if !isStr {
			return nil, fmt.Errorf("%w: $ref at %s is %s, want a string", ErrSchema, at, jsonType(ref))
		}
		if len(s) > 1 && !onlyAnnotations(s, "$ref") {
			return nil, fmt.Errorf("%w: $ref at %s has sibling keywords; put them in the referenced schema", ErrSchema, at)
		}
		return c.add(&node{ref: r}), nil
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			name, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%w: type at %s holds %s, want type names", ErrSchema, at, jsonType(e))
			}
			types = append(types, name)
		}
	default:
		return nil, fmt.Errorf("%w: type at %s is %s, want a string or an array of strings", ErrSchema, at, jsonType(t))
	}
	for _, t := range types {
		switch t {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return nil, fmt.Errorf("%w: type %q at %s, want object, array, string, number, integer, boolean or null", ErrSchema, t, at)
		}
	}
	if e, ok := s["const"]; ok {
		return c.literals([]any{e}, types, at+"/const")
	}
	if e, ok := s["enum"]; ok {
		values, isArr := e.([]any)
		if !isArr || len(values) == 0 {
			return nil, fmt.Errorf("%w: enum at %s, want a non-empty array", ErrSchema, at)
		}
		return c.literals(values, types, at+"/enum")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if b, ok := s[k]; ok {
			if len(types) > 0 {
				return nil, fmt.Errorf("%w: %s at %s next to type; put the types in the branches", ErrSchema, k, at)
			}
			branches, isArr := b.([]any)
			if !isArr || len(branches) == 0 {
				return nil, fmt.Errorf("%w: %s at %s, want a non-empty array of schemas", ErrSchema, k, at)
			}
			var alts []*node
			for i, br := range branches {
				n, err := c.compile(br, fmt.Sprintf("%s/%s/%d", at, k, i))
				if err != nil {
					return nil, err
				}
				alts = append(alts, n)
			}
			return c.union(alts, at+"/"+k), nil
		}
	}
	if len(types) == 0 {
		return c.any(), nil
	}
	var alts []*node
	for _, t := range types {
		if t == "integer" && slices.Contains(types, "number") {
			continue // every integer is a number
		}
		n, err := c.typed(s, t, at)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.union(alts, at+"/type"), nil
}

func onlyAnnotations(s map[string]any, except string) bool {
	for k := range s {
		if k != except && !annotations[k] {
			return false
		}
	}
	return true
}

// typed compiles schema s as type t.
func (c *compiler) typed(s map[string]any, t, at string) (*node, error) {
	for _, k := range []string{"properties", "required"} {
		if _, ok := s[k]; ok && t != "object" && !slices.Contains(typesOf(s), "object") {
			return nil, fmt.Errorf("%w: %s at %s applies to objects, the type is %s", ErrSchema, k, at, t)
		}
	}
	switch t {
	case "string":
		return c.add(&node{kind: kString}), nil
	case "number":
		return c.add(&node{kind: kNumber}), nil
	case "integer":
		return c.add(&node{kind: kInteger}), nil
	case "boolean":
		return c.add(&node{kind: kLits, lits: []string{"true", "false"}}), nil
	case "null":
		return c.add(&node{kind: kLits, lits: []string{"null"}}), nil
	case "array":
		n := &node{kind: kArray, maxItems: -1}
		var err error
		if n.minItems, err = count(s, "minItems", 0, at); err != nil {
			return nil, err
		}
		if n.maxItems, err = count(s, "maxItems", -1, at); err != nil {
			return nil, err
		}
		if n.maxItems >= 0 && n.maxItems < n.minItems {
			return nil, fmt.Errorf("%w: maxItems %d < minItems %d at %s", ErrSchema, n.maxItems, n.minItems, at)
		}
		n.items = c.any()
		if it, ok := s["items"]; ok {
			if n.items, err = c.compile(it, at+"/items"); err != nil {
				return nil, err
			}
		}
		return c.add(n), nil
	}
	// object
	props, _ := s["properties"].(map[string]any)
	if p, ok := s["properties"]; ok && props == nil {
		return nil, fmt.Errorf("%w: properties at %s is %s, want an object", ErrSchema, at, jsonType(p))
	}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		names, isArr := r.([]any)
		if !isArr {
			return nil, fmt.Errorf("%w: required at %s is %s, want an array of names", ErrSchema, at, jsonType(r))
		}
		for _, e := range names {
			name, isStr := e.(string)
			if !isStr {
				return nil, fmt.Errorf("%w: required at %s holds %s, want names", ErrSchema, at, jsonType(e))
			}
			if _, declared := props[name]; !declared {
				return nil, fmt.Errorf("%w: required property %q at %s is not among its properties (undeclared properties are not generated)", ErrSchema, name, at)
			}
			required[name] = true
		}
	}
	additional, hasAdditional := s["additionalProperties"]
	if len(props) == 0 && !c.strict && (!hasAdditional || additional != false) {
		val := c.any()
		if sub, isSchema := additional.(map[string]any); isSchema {
			var err error
			if val, err = c.compile(sub, at+"/additionalProperties"); err != nil {
				return nil, err
			}
		}
		return c.add(&node{kind: kFreeObj, val: val}), nil
	}
	if len(props) > maxAlternatives {
		return nil, fmt.Errorf("%w: %d properties at %s, at most %d", ErrSchema, len(props), at, maxAlternatives)
	}
	n := &node{kind: kObject}
	// Declared order: the order of the keys in the request's JSON.
	for _, name := range c.declaredOrder(at+"/properties", props) {
		v, err := c.compile(props[name], at+"/properties/"+name)
		if err != nil {
			return nil, err
		}
		n.props = append(n.props, prop{key: compact(name) + ":", val: v, required: required[name]})
	}
	return c.add(n), nil
}

func typesOf(s map[string]any) []string {
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, e := range t {
			if name, ok := e.(string); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// count reads a non-negative integer keyword (def when absent).
func count(s map[string]any, k string, def int, at string) (int, error) {
	v, ok := s[k]
	if !ok {
		return def, nil
	}
	f, isNum := v.(float64)
	if !isNum || f < 0 || f != math.Trunc(f) || f > 1<<20 {
		return 0, fmt.Errorf("%w: %s at %s is %v, want an integer 0 to %d", ErrSchema, k, at, v, 1<<20)
	}
	return int(f), nil
}

// any returns the node of any JSON value.
func (c *compiler) any() *node {
	if n := c.defs["\x00any"]; n != nil {
		return n
	}
	n := c.add(&node{kind: kUnion, alts: map[byte]*node{}})
	c.defs["\x00any"] = n
	obj := c.add(&node{kind: kFreeObj, val: n})
	arr := c.add(&node{kind: kArray, items: n, maxItems: -1})
	str := c.add(&node{kind: kString})
	num := c.add(&node{kind: kNumber})
	lits := c.add(&node{kind: kLits, lits: []string{"true", "false", "null"}})
	n.alts['{'], n.alts['['], n.alts['"'], n.alts['-'] = obj, arr, str, num
	for d := byte('0'); d <= '9'; d++ {
		n.alts[d] = num
	}
	n.alts['t'], n.alts['f'], n.alts['n'] = lits, lits, lits
	return n
}

// literals compiles enum or const values, keeping those of the given
// types (all when none are given).
func (c *compiler) literals(values []any, types []string, at string) (*node, error) {
	n := &node{kind: kLits}
	for _, v := range values {
		if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			continue
		}
		text := compact(v)
		if !slices.Contains(n.lits, text) {
			n.lits = append(n.lits, text)
		}
	}
	switch {
	case len(n.lits) == 0:
		return nil, fmt.Errorf("%w: no value of %s has the type %v", ErrSchema, at, types)
	case len(n.lits) > maxAlternatives:
		return nil, fmt.Errorf("%w: %d values at %s, at most %d", ErrSchema, len(n.lits), at, maxAlternatives)
	}
	return c.add(n), nil
}

// union joins alternatives told apart by their first byte.
func (c *compiler) union(alts []*node, at string) *node {
	n := c.add(&node{kind: kUnion})
	// Refs are resolved later; keep them and merge in resolve.
	n.props = make([]prop, len(alts))
	for i, a := range alts {
		n.props[i] = prop{key: at, val: a}
	}
	return n
}

// resolve points every $ref at its schema and builds the unions' first-byte
// maps.
func (c *compiler) resolve() error {
	for i := 0; i < len(c.all); i++ { // compiling a $def adds nodes
		n := c.all[i]
		if n.ref == "" || n.ref == "\x00alias" {
			continue
		}
		target, ok := c.defs[n.ref]
		if !ok {
			sub, err := c.lookup(n.ref)
			if err != nil {
				return err
			}
			placeholder := c.add(&node{})
			c.defs[n.ref] = placeholder
			t, err := c.compile(sub, n.ref)
			if err != nil {
				return err
			}
			*placeholder = node{ref: "\x00alias", val: t}
			target = placeholder
		}
		n.ref, n.val = "\x00alias", target
	}
	for _, n := range c.all {
		if err := c.buildUnion(n, map[*node]bool{}); err != nil {
			return err
		}
	}
	return nil
}

// buildUnion fills in the first-byte map of a union (and of the unions it
// joins, first).
func (c *compiler) buildUnion(n *node, visiting map[*node]bool) error {
	if n.ref != "" || n.kind != kUnion || n.alts != nil {
		return nil
	}
	if visiting[n] {
		return fmt.Errorf("%w: anyOf/oneOf refers back to itself through a branch", ErrSchema)
	}
	visiting[n] = true
	alts := map[byte]*node{}
	for _, p := range n.props {
		a := deref(p.val)
		if err := c.buildUnion(a, visiting); err != nil {
			return err
		}
		for _, b := range firstBytes(a) {
			if prev, dup := alts[b]; dup && prev != a {
				return fmt.Errorf("%w: two branches of %s start with %q: only branches of different types (or enum values starting differently) are supported", ErrSchema, p.key, b)
			}
			if a.kind == kUnion {
				alts[b] = a.alts[b]
			} else {
				alts[b] = a
			}
		}
	}
	n.alts, n.props = alts, nil
	return nil
}

// lookup finds the schema a $ref names.
func (c *compiler) lookup(ref string) (any, error) {
	if ref == "#" {
		return c.root, nil
	}
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := c.root[strings.Trim(prefix[1:], "/")].(map[string]any)
			if sub, found := defs[name]; found {
				return sub, nil
			}
			return nil, fmt.Errorf("%w: $ref %q: no such definition", ErrSchema, ref)
		}
	}
	return nil, fmt.Errorf("%w: $ref %q, want \"#\", \"#/$defs/NAME\" or \"#/definitions/NAME\"", ErrSchema, ref)
}

// deref follows $ref aliases.
func deref(n *node) *node {
	for n != nil && n.ref == "\x00alias" {
		n = n.val
	}
	return n
}

// firstBytes are the bytes a text of n may start with.
func firstBytes(n *node) []byte {
	switch n.kind {
	case kString:
		return []byte{'"'}
	case kNumber, kInteger:
		return []byte("-0123456789")
	case kArray:
		return []byte{'['}
	case kObject, kFreeObj:
		return []byte{'{'}
	case kLits:
		var out []byte
		for _, l := range n.lits {
			if !slices.Contains(out, l[0]) {
				out = append(out, l[0])
			}
		}
		return out
	}
	var out []byte
	for b := range n.alts {
		out = append(out, b)
	}
	return out
}

// lengths computes every node's minLen as a fixed point (recursive
// schemas), then the objects' reqAfter sums.
func (c *compiler) lengths() {
	for _, n := range c.all {
		n.minLen = inf
	}
	for changed := true; changed; {
		changed = false
		for _, n := range c.all {
			if l := minLen(n); l < n.minLen {
				n.minLen, changed = l, true
			}
		}
	}
	for _, n := range c.all {
		if n.kind != kObject || n.ref != "" {
			continue
		}
		n.reqAfter = make([]int, len(n.props)+1)
		n.reqAfter[len(n.props)] = 1
		for i := len(n.props) - 1; i >= 0; i-- {
			n.reqAfter[i] = n.reqAfter[i+1]
			if p := n.props[i]; p.required {
				n.reqAfter[i] = sat(n.reqAfter[i] + 1 + len(p.key) + deref(p.val).minLen)
			}
		}
	}
}

func sat(n int) int { return min(n, inf) }

// minLen is one step of the fixed point.
func minLen(n *node) int {
	if n.ref != "" {
		if n.val == nil {
			return inf
		}
		return n.val.minLen
	}
	switch n.kind {
	case kString:
		return 2
	case kNumber, kInteger:
		return 1
	case kLits:
		l := inf
		for _, s := range n.lits {
			l = min(l, len(s))
		}
		return l
	case kArray:
		if n.minItems == 0 {
			return 2
		}
		return sat(2 + n.minItems*deref(n.items).minLen + n.minItems - 1)
	case kFreeObj:
		return 2
	case kObject:
		l, req := 2, 0
		for _, p := range n.props {
			if p.required {
				l, req = sat(l+len(p.key)+deref(p.val).minLen), req+1
			}
		}
		return l + max(req-1, 0)
	}
	l := inf
	for _, a := range n.alts {
		l = min(l, a.minLen)
	}
	return l
}

// declaredOrder returns the names of the properties at path in the order
// the request wrote them (order, from decodeSchema), else sorted.
func (c *compiler) declaredOrder(path string, props map[string]any) []string {
	if names := c.order[path]; len(names) == len(props) {
		return names
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// decodeSchema decodes a JSON schema and the key order of each of its
// objects by path ("#", "#/properties", "#/$defs/x/properties"...):
// json.Unmarshal into maps forgets the order, and properties are written
// in it.
func decodeSchema(raw []byte) (any, map[string][]string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	order := map[string][]string{}
	var value func(path string) (any, error)
	value = func(path string) (any, error) {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t {
		case json.Delim('{'):
			m := map[string]any{}
			var keys []string
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := value(path + "/" + k)
				if err != nil {
					return nil, err
				}
				if _, dup := m[k]; !dup {
					keys = append(keys, k)
				}
				m[k] = v
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			order[path] = keys
			return m, nil
		case json.Delim('['):
			a := []any{}
			for i := 0; d.More(); i++ {
				v, err := value(fmt.Sprintf("%s/%d", path, i))
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return t, nil
	}
	v, err := value("#")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the schema is not JSON: %w", ErrSchema, err)
	}
	return v, order, nil
}

// compact is v as compact JSON, HTML characters unescaped (the text the
// model must write).
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// hasType reports whether a decoded JSON value has JSON schema type t.
func hasType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x))
	case json.Number:
		_, err := x.Int64()
		return t == "number" || (t == "integer" && err == nil)
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
