package tokenizer

import (
	"fmt"
	"strings"
)

// Encode returns the ids of text, BOS first when addBOS (llama2.c's
// encode(text, bos, eos=0); see BPE). It returns ErrEncode when a character
// is neither a piece nor coverable by byte pieces and there is no unknown
// piece. Time is O(n log n) in the length of text: candidate merges sit in a
// heap over a linked list of symbols, rather than llama2.c's rescan of all
// pairs after every merge (O(n^2)); the result is the same.
func (t *BPE) Encode(text string, addBOS bool) ([]int, error) {
	out := make([]int, 0, len(text)/3+2)
	if addBOS {
		out = append(out, t.bos)
	}
	if t.removeExtraSpaces {
		text = collapseSpaces(text)
	}
	if text == "" {
		return out, nil
	}
	if t.dummyPrefix {
		text = " " + text
	}
	syms, err := t.initialSymbols(text)
	if err != nil {
		return nil, err
	}
	mergeSymbols(syms, t.scoredPair)
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out, nil
}

// collapseSpaces drops leading and trailing spaces and turns runs of
// spaces into one, as SentencePiece's remove_extra_whitespaces.
func collapseSpaces(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

// symbol is one token of the working sequence: a node of a doubly linked
// list over the initial symbols, in text order. A merge keeps the left
// symbol (with the merged id) and unlinks the right one.
type symbol struct {
	id         int
	prev, next int // indexes into the symbol slice; -1 at the ends
	dead       bool
}

// initialSymbols splits text like llama2.c: a chunk is one byte plus the
// UTF-8 continuation bytes that follow it, at most 4 bytes in all (so a
// valid character is one chunk). A chunk that is a piece becomes that piece;
// otherwise each of its bytes becomes its byte piece, or the unknown piece.
func (t *BPE) initialSymbols(text string) ([]symbol, error) {
	syms := make([]symbol, 0, len(text))
	add := func(id int) {
		n := len(syms)
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
	}
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && j-i < 4 && text[j]&0xC0 == 0x80 {
			j++
		}
		if id, ok := t.ids[text[i:j]]; ok {
			add(id)
			i = j
			continue
		}
		for ; i < j; i++ {
			switch id := t.byteIDs[text[i]]; {
			case id >= 0:
				add(id)
			case t.unk >= 0:
				add(t.unk)
			default:
				return nil, fmt.Errorf("%w: byte 0x%02X at offset %d: no piece, no byte piece <0x%02X> and no unknown piece", ErrEncode, text[i], i, text[i])
			}
		}
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms, nil
}

// scoredPair is BPE's merge rule for mergeSymbols: pieces a and b merge
// when their concatenation is a piece scoring above minMergeScore; the
// higher its score, the earlier.
func (t *BPE) scoredPair(a, b int) (id int, priority float64, ok bool) {
	var buf [64]byte
	joined := append(append(buf[:0], t.pieces[a]...), t.pieces[b]...)
	id, ok = t.ids[string(joined)]
	if !ok || t.scores[id] <= minMergeScore {
		return 0, 0, false
	}
	return id, float64(t.scores[id]), true
}

// pairFunc tells whether the adjacent symbols with ids a and b merge, into
// which id, and with what priority: the highest priority merges first, ties
// going to the leftmost pair.
type pairFunc func(a, b int) (id int, priority float64, ok bool)

// candidate is a possible merge of the adjacent symbols left and right into
// piece id. It is stale when either symbol changed since it was pushed.
type candidate struct {
	priority        float64
	left, right     int // symbol indexes
	leftID, rightID int // their ids when pushed
	id              int
}

// candidates is a binary max-heap of merges by priority, ties broken by the
// leftmost pair (llama2.c scans left to right and keeps the first best
// score; Hugging Face tokenizers and transformers.js order equal ranks by
// position). Typed rather than container/heap to avoid boxing every push.
type candidates []candidate

func (h candidates) before(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	return h[i].left < h[j].left
}

func (h *candidates) push(c candidate) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.before(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *candidates) pop() candidate {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, best := 2*i+1, 2*i+2, i
		if l < len(q) && q.before(l, best) {
			best = l
		}
		if r < len(q) && q.before(r, best) {
			best = r
		}
		if best == i {
			break
		}
		q[i], q[best] = q[best], q[i]
		i = best
	}
	*h = q
	return top
}

// mergeSymbols applies pair merges to syms until none applies: always the
// highest-priority merge of two adjacent live symbols (the leftmost among
// equals). Symbols only grow, so a candidate whose symbols still carry the
// ids it saw is still exact. Symbols with negative ids never merge.
func mergeSymbols(syms []symbol, pair pairFunc) {
	h := make(candidates, 0, len(syms))
	try := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		a, b := syms[left].id, syms[right].id
		if a < 0 || b < 0 {
			return
		}
		id, priority, ok := pair(a, b)
		if !ok {
			return
		}
		h.push(candidate{priority: priority, left: left, right: right, leftID: a, rightID: b, id: id})
	}
	for i := 0; i+1 < len(syms); i++ {
		try(i, i+1)
	}
	for len(h) > 0 {
		c := h.pop()
		l, r := &syms[c.left], &syms[c.right]
		if l.dead || r.dead || l.next != c.right || l.id != c.leftID || r.id != c.rightID {
			continue // stale: one side merged since
		}
		l.id = c.id
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = c.left
		}
		try(l.prev, c.left)
		try(c.left, l.next)
	}
}

// EncodeSpecial encodes text in which special tokens appear as text (a
// chat template's rendering: "<start_of_turn>user\n..."): the control and
// user-defined pieces are matched first, leftmost-longest, and become
// their ids, and the text between them is encoded without BOS, as
// llama.cpp's tokenize(parse_special=true) and transformers' added-token
// matching do. Errors are Encode's.
func (t *BPE) EncodeSpecial(text string) ([]int, error) {
	t.specialOnce.Do(func() {
		var list []addedToken
		for id, typ := range t.types {
			if (typ == TypeControl || typ == TypeUserDefined) && len(t.pieces[id]) > 1 {
				list = append(list, addedToken{id: id, content: t.pieces[id], control: typ == TypeControl})
			}
		}
		t.special = newAddedTokens(list)
	})
	var out []int
	for _, sec := range t.special.split(text) {
		if sec.id >= 0 {
			out = append(out, sec.id)
			continue
		}
		ids, err := t.Encode(sec.text, false)
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	return out, nil
}
