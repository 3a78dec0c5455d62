package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/ingress"
)

// The recognizer of a compiled schema (jsonschema.go): a pushdown
// automaton over bytes whose stack holds one frame per open value. It is a
// value: copying a jstate forks the parse (frames below the top are never
// written in place; a push copies them).

// Frame phases; pStart (0) is every frame's phase before its first byte.
const (
	pStart uint8 = iota
	// strings
	sIn  // inside: any byte but '"', '\\' and controls; '"' closes
	sEsc // after '\\'
	sHex // in \uXXXX, pos hex digits left
	// numbers
	nMinus // after '-': a digit
	nZero  // a leading 0: '.', 'e' or the end
	nInt   // integer digits: more, '.', 'e' or the end
	nDot   // after '.': a digit
	nFrac  // fraction digits: more, 'e' or the end
	nE     // after 'e': a sign or a digit
	nESign // after the exponent's sign: a digit
	nExp   // exponent digits: more or the end
	// literals (kLits): cand the texts still possible, pos bytes matched
	lIn
	// arrays: i items started
	aOpen  // after '[': an item or ']'
	aAfter // after an item: ',' or ']'
	aNeed  // after ',': an item
	// declared objects: i the last property written (-1: none)
	oOpen  // after '{': a key or '}'
	oAfter // after a value: ',' or '}'
	oComma // after ',': '"' of a key
	oKey   // in a key (with its ':'): cand the properties still possible
	// free objects (json_object, or an object schema without properties)
	fOpen  // after '{': '"' or '}'
	fColon // after a key: ':'
	fVal   // after ':': a value
	fAfter // after a value: ',' or '}'
	fComma // after ',': '"' of a key
)

// keyNode is the string of a free object's key.
var keyNode = &node{kind: kString, minLen: 2}

// frame is one open value.
type frame struct {
	n     *node // nil: the document is complete
	phase uint8
	i     int32  // items started (kArray), last property (kObject)
	pos   int32  // bytes matched (kLits, oKey), hex digits left (sHex)
	cand  uint64 // candidate literals (kLits) or properties (oKey)
}

// jstate is the parse of a prefix of one document.
type jstate struct {
	parents []frame // the open values around cur, outermost first
	cur     frame
}

// newJState starts a parse of a document of root.
func newJState(root *node) jstate { return jstate{cur: frame{n: deref(root)}} }

// outcome of feeding one byte to the top frame.
type outcome uint8

const (
	fed     outcome = iota // consumed; the frame stays open
	bad                    // no document continues this way
	ended                  // the frame ended before c: pop, give c to the parent
	closed                 // c closed the frame: pop
	descend                // a child was pushed (or the frame retyped): give it c
)

func (st *jstate) push(n *node, phase uint8) {
	st.parents = append(st.parents[:len(st.parents):len(st.parents)], st.cur)
	st.cur = frame{n: deref(n), phase: phase}
}

func (st *jstate) pop() {
	if len(st.parents) == 0 {
		st.cur = frame{}
		return
	}
	st.cur = st.parents[len(st.parents)-1]
	st.parents = st.parents[:len(st.parents)-1]
}

// step reads one byte; false if no document of the schema starts with the
// bytes so far and c (st is then meaningless).
func (st *jstate) step(c byte) bool {
	for {
		if st.cur.n == nil {
			return false // nothing follows the document
		}
		switch st.feed(c) {
		case fed:
			return true
		case bad:
			return false
		case ended:
			st.pop()
		case closed:
			st.pop()
			return true
		case descend:
		}
	}
}

// feed steps the top frame.
func (st *jstate) feed(c byte) outcome {
	f := &st.cur
	n := f.n
	switch n.kind {
	case kUnion:
		a := n.alts[c]
		if a == nil {
			return bad
		}
		f.n = a
		return descend
	case kString:
		return feedString(f, c)
	case kNumber, kInteger:
		return feedNumber(f, c, n.kind == kInteger)
	case kLits:
		if f.phase == pStart {
			f.phase, f.cand = lIn, (uint64(1)<<len(n.lits))-1
		}
		var next uint64
		for m := f.cand; m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if l := n.lits[k]; len(l) > int(f.pos) && l[f.pos] == c {
				next |= 1 << k
			}
		}
		if next != 0 {
			f.cand, f.pos = next, f.pos+1
			return fed
		}
		if litsComplete(f) {
			return ended
		}
		return bad
	case kArray:
		switch {
		case f.phase == pStart:
			if c != '[' {
				return bad
			}
			f.phase = aOpen
			return fed
		case f.phase == aOpen && c == ']':
			if n.minItems > 0 {
				return bad
			}
			return closed
		case f.phase == aAfter:
			switch {
			case c == ',' && (n.maxItems < 0 || int(f.i) < n.maxItems):
				f.phase = aNeed
				return fed
			case c == ']' && int(f.i) >= n.minItems:
				return closed
			}
			return bad
		}
		if n.maxItems == 0 {
			return bad
		}
		f.phase, f.i = aAfter, f.i+1 // aOpen or aNeed: an item starts with c
		st.push(n.items, pStart)
		return descend
	case kObject:
		switch f.phase {
		case pStart:
			if c != '{' {
				return bad
			}
			f.phase, f.i = oOpen, -1
			return fed
		case oOpen, oComma:
			if c == '}' && f.phase == oOpen && n.reqAfter[0] == 1 {
				return closed
			}
			if c != '"' {
				return bad
			}
			if f.cand = keyCandidates(n, f.i); f.cand == 0 {
				return bad
			}
			f.phase, f.pos = oKey, 1
			return fed
		case oAfter:
			switch {
			case c == ',' && int(f.i) < len(n.props)-1:
				f.phase = oComma
				return fed
			case c == '}' && n.reqAfter[f.i+1] == 1:
				return closed
			}
			return bad
		}
		// oKey
		var next uint64
		done := -1
		for m := f.cand; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m)
			if k := n.props[j].key; len(k) > int(f.pos) && k[f.pos] == c {
				next |= 1 << j
				if len(k) == int(f.pos)+1 {
					done = j
				}
			}
		}
		if next == 0 {
			return bad
		}
		f.cand, f.pos = next, f.pos+1
		if done >= 0 { // keys with their ':' are prefix-free: done is the one
			f.phase, f.i = oAfter, int32(done)
			st.push(n.props[done].val, pStart)
		}
		return fed
	}
	// kFreeObj
	switch {
	case f.phase == pStart && c == '{':
		f.phase = fOpen
		return fed
	case (f.phase == fOpen || f.phase == fComma) && c == '"':
		f.phase = fColon
		st.push(keyNode, sIn)
		return fed
	case f.phase == fOpen && c == '}', f.phase == fAfter && c == '}':
		return closed
	case f.phase == fColon && c == ':':
		f.phase = fVal
		return fed
	case f.phase == fVal:
		f.phase = fAfter
		st.push(n.val, pStart)
		return descend
	case f.phase == fAfter && c == ',':
		f.phase = fComma
		return fed
	}
	return bad
}

func feedString(f *frame, c byte) outcome {
	switch f.phase {
	case pStart:
		if c != '"' {
			return bad
		}
		f.phase = sIn
	case sIn:
		switch {
		case c == '"':
			return closed
		case c == '\\':
			f.phase = sEsc
		case c < 0x20:
			return bad
		}
	case sEsc:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.phase = sIn
		case 'u':
			f.phase, f.pos = sHex, 4
		default:
			return bad
		}
	case sHex:
		if !isHex(c) {
			return bad
		}
		if f.pos--; f.pos == 0 {
			f.phase = sIn
		}
	}
	return fed
}

// Digits a number may have, in its integer and fraction parts and in its
// exponent: any float64 parses without overflow (JSON allows more; no
// client can read it).
const (
	maxDigits    = 16
	maxExpDigits = 2
)

// feedNumber steps a number; f.pos counts the digits of the current part.
func feedNumber(f *frame, c byte, integer bool) outcome {
	digit := isDigit(c)
	frac := !integer && c == '.'
	exp := !integer && (c == 'e' || c == 'E')
	more := func(limit int32) outcome {
		if f.pos >= limit {
			return bad
		}
		f.pos++
		return fed
	}
	switch f.phase {
	case pStart, nMinus:
		switch {
		case c == '-' && f.phase == pStart:
			f.phase = nMinus
		case c == '0':
			f.phase, f.pos = nZero, 1
		case digit:
			f.phase, f.pos = nInt, 1
		default:
			return bad
		}
	case nZero, nInt:
		switch {
		case digit && f.phase == nInt:
			return more(maxDigits)
		case frac:
			f.phase = nDot
		case exp:
			f.phase = nE
		case digit:
			return bad // a leading zero
		default:
			return ended
		}
	case nDot:
		if !digit {
			return bad
		}
		f.phase, f.pos = nFrac, 1
	case nESign:
		if !digit {
			return bad
		}
		f.phase, f.pos = nExp, 1
	case nFrac:
		switch {
		case digit:
			return more(maxDigits)
		case exp:
			f.phase = nE
		default:
			return ended
		}
	case nE:
		switch {
		case c == '+' || c == '-':
			f.phase = nESign
		case digit:
			f.phase, f.pos = nExp, 1
		default:
			return bad
		}
	case nExp:
		if digit {
			return more(maxExpDigits)
		}
		return ended
	}
	return fed
}

// keyCandidates are the properties that may come after property i: the
// next ones up to and including the first required one.
func keyCandidates(n *node, i int32) uint64 {
	var m uint64
	for j := int(i) + 1; j < len(n.props); j++ {
		m |= 1 << j
		if n.props[j].required {
			break
		}
	}
	return m
}

func litsComplete(f *frame) bool {
	for m := f.cand; m != 0; m &= m - 1 {
		if len(f.n.lits[bits.TrailingZeros64(m)]) == int(f.pos) {
			return true
		}
	}
	return false
}

// canEnd reports whether the document may end here: complete, or a root
// number or literal that is.
func (st *jstate) canEnd() bool {
	if len(st.parents) > 0 {
		return false
	}
	f := st.cur
	switch {
	case f.n == nil:
		return true
	case f.n.kind == kNumber || f.n.kind == kInteger:
		return f.phase == nZero || f.phase == nInt || f.phase == nFrac || f.phase == nExp
	case f.n.kind == kLits:
		return f.phase == lIn && litsComplete(&f)
	}
	return false
}

// need is the length in bytes of the shortest text that completes the
// document from here (0 when it may end).
func (st *jstate) need() int {
	total := rest(&st.cur)
	for i := range st.parents {
		total = sat(total + rest(&st.parents[i]))
	}
	return total
}

// rest is the shortest text that completes frame f, for a parent once the
// value it is reading has ended.
func rest(f *frame) int {
	n := f.n
	if n == nil {
		return 0
	}
	if f.phase == pStart {
		return n.minLen
	}
	switch f.phase {
	case sIn:
		return 1
	case sEsc:
		return 2
	case sHex:
		return int(f.pos) + 1
	case nMinus, nDot, nE, nESign:
		return 1
	case nZero, nInt, nFrac, nExp:
		return 0
	case lIn:
		l := inf
		for m := f.cand; m != 0; m &= m - 1 {
			l = min(l, len(n.lits[bits.TrailingZeros64(m)])-int(f.pos))
		}
		return l
	case aOpen, aAfter, aNeed:
		item := deref(n.items).minLen
		left := max(n.minItems-int(f.i), 0)
		switch f.phase {
		case aOpen:
			if n.minItems == 0 {
				return 1
			}
			return sat(n.minItems*item + n.minItems)
		case aAfter:
			return sat(left*(1+item) + 1)
		}
		return sat(item + (max(left, 1)-1)*(1+item) + 1)
	case oOpen:
		if n.reqAfter[0] > 1 {
			return n.reqAfter[0] - 1
		}
		return 1
	case oAfter:
		return n.reqAfter[f.i+1]
	case oComma, oKey:
		cand, pos := f.cand, int(f.pos)
		if f.phase == oComma {
			cand, pos = keyCandidates(n, f.i), 0
		}
		l := inf
		for m := cand; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m)
			p := n.props[j]
			l = min(l, sat(len(p.key)-pos+deref(p.val).minLen+n.reqAfter[j+1]))
		}
		return l
	case fOpen, fAfter:
		return 1
	case fColon:
		return sat(2 + deref(n.val).minLen)
	case fVal:
		return sat(1 + deref(n.val).minLen)
	case fComma:
		return sat(4 + deref(n.val).minLen)
	}
	return 0
}

// jsonSchema is the blocks.Constraint of response_format {"type":
// "json_schema"}: the text generated is a prefix of a document of the
// schema's grammar, EOS may come only once the document is complete, and,
// told its budget (SetBudget), it allows only tokens after which the
// shortest completion still fits in the tokens left, so that the document
// is complete when max_tokens is reached (finish_reason "stop" when it
// closes exactly then). The shortest completion is
// counted in bytes: one token per byte holds when the vocabulary has a
// piece for every byte it writes (byte-fallback and byte-level BPE
// vocabularies do). If max_tokens is smaller than the shortest document,
// decoding follows the shortest completion and stops with finish_reason
// "length" and an incomplete document.
type jsonSchema struct {
	pieces   []string
	bos, eos int
	state    jstate
	budget   int // tokens left; < 0: unbounded
	needNow  int // state.need(), kept by Accept
	format   any
}

var _ blocks.BudgetedConstraint = (*jsonSchema)(nil)

// newJSONSchema returns a fresh constraint of root over tok's pieces;
// format is the response_format forwarded to replicas.
func newJSONSchema(tok tokenizer.Tokenizer, root *node, format any) *jsonSchema {
	c := &jsonSchema{pieces: make([]string, tok.VocabSize()), bos: tok.BOS(), eos: tok.EOS(), state: newJState(root), budget: -1, format: format}
	c.needNow = c.state.need()
	for id := range c.pieces {
		c.pieces[id] = tok.Decode(-1, id)
	}
	return c
}

// ResponseFormat is what replicas are asked for instead: their engine
// constrains its own output.
func (c *jsonSchema) ResponseFormat() any { return c.format }

// SetBudget tells the constraint how many tokens may still be drawn.
func (c *jsonSchema) SetBudget(tokens int) { c.budget = tokens }

// Done reports that the document is closed: only EOS may follow.
func (c *jsonSchema) Done() bool { return c.state.cur.n == nil }

func (c *jsonSchema) Allowed(id int) bool {
	switch {
	case id == c.eos:
		return c.state.canEnd()
	case id == c.bos || id < 0 || id >= len(c.pieces) || c.pieces[id] == "":
		return false
	}
	next := c.state
	piece := c.pieces[id]
	for i := range len(piece) {
		if !next.step(piece[i]) {
			return false
		}
	}
	if c.budget < 0 || c.needNow > c.budget {
		return true // unbounded, or already too late to complete
	}
	return next.need() <= c.budget-1
}

func (c *jsonSchema) Accept(id int) {
	if id < 0 || id >= len(c.pieces) || id == c.eos {
		return
	}
	piece := c.pieces[id]
	for i := range len(piece) {
		c.state.step(piece[i])
	}
	c.needNow = c.state.need()
	if c.budget > 0 {
		c.budget--
	}
}

// responseFormat reads "response_format": {"type": "text"} (nil),
// {"type": "json_object"}, or {"type": "json_schema", "json_schema":
// {"name", "description", "schema", "strict"}}, returning the constraint
// over tok. Errors are 400s naming response_format.
func responseFormat(raw json.RawMessage, tok tokenizer.Tokenizer) (blocks.Constraint, error) {
	var rf struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return nil, badParam("response_format", fmt.Sprintf("response_format %s: want {\"type\": \"text\" | \"json_object\" | \"json_schema\", \"json_schema\": {...}}: %v", raw, err))
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return newJSONObject(tok), nil
	case "json_schema":
	default:
		return nil, unsupported("response_format", fmt.Sprintf("type %q: only \"text\", \"json_object\" and \"json_schema\" are served", rf.Type))
	}
	var js struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	dec = json.NewDecoder(bytes.NewReader(rf.JSONSchema))
	dec.DisallowUnknownFields()
	if !set(rf.JSONSchema) {
		return nil, badParam("response_format.json_schema", "response_format.json_schema is required with type \"json_schema\"")
	}
	if err := dec.Decode(&js); err != nil {
		return nil, badParam("response_format.json_schema", fmt.Sprintf("response_format.json_schema: want {\"name\", \"description\", \"schema\", \"strict\"}: %v", err))
	}
	if !set(js.Schema) {
		return nil, badParam("response_format.json_schema.schema", "response_format.json_schema.schema is required")
	}
	root, err := compileSchema(js.Schema, js.Strict != nil && *js.Strict)
	if err != nil {
		return nil, badParam("response_format.json_schema.schema", "response_format.json_schema.schema: "+strings.TrimPrefix(err.Error(), "openai: "))
	}
	var format any
	if err := json.Unmarshal(raw, &format); err != nil {
		return nil, badParam("response_format", err.Error())
	}
	return newJSONSchema(tok, root, format), nil
}

// fits refuses a json_schema request whose max tokens (field param) cannot
// hold the shortest document of its schema.
func fits(req ingress.Request, param string) error {
	js, ok := req.Sampler.Constraint.(*jsonSchema)
	if !ok {
		return nil
	}
	if need := js.state.need(); req.MaxTokens < need {
		return badParam(param, fmt.Sprintf("%s %d is too small for the response_format schema: its shortest document takes %d tokens", param, req.MaxTokens, need))
	}
	return nil
}
