package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// More sentinel errors callers can test with errors.Is.
var (
	// ErrRepoRef: a model argument is not ORG/REPO[@REVISION][:FILE].
	ErrRepoRef = errors.New("hub: bad repository reference")
	// ErrNoModel: the repository holds no model file this package can
	// pick, or several where one is needed; the message lists them.
	ErrNoModel = errors.New("hub: no model to pick")
	// ErrOffline: the endpoint cannot be reached (or HF_HUB_OFFLINE is set)
	// and the cache does not hold what is needed; the message names the
	// repository, the endpoint and the cache directory.
	ErrOffline = errors.New("hub: offline")
)

// RepoRef names a model in a hub repository, as `swarm serve --model`
// takes it: ORG/REPO, ORG/REPO@REVISION, ORG/REPO:FILE or
// ORG/REPO@REVISION:FILE.
type RepoRef struct {
	// Repo is "owner/name".
	Repo string
	// Revision is the branch, tag or commit; "main" when not given.
	Revision string
	// File, if not empty, picks the model file: a .gguf path in the
	// repository, a part of one .gguf file's name such as a quantization
	// (Q4_K_M, matched case-insensitively), or a .safetensors/config.json
	// name to pick the safetensors layout over GGUF files.
	File string
}

// String is the reference as ParseRepoRef reads it.
func (r RepoRef) String() string {
	s := r.Repo
	if r.Revision != "" && r.Revision != "main" {
		s += "@" + r.Revision
	}
	if r.File != "" {
		s += ":" + r.File
	}
	return s
}

// repoName is a hub repository id: owner/name of letters, digits, '-',
// '_' and '.' (https://huggingface.co/docs/hub/repositories).
var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseRepoRef reads ORG/REPO[@REVISION][:FILE]. Errors wrap ErrRepoRef.
func ParseRepoRef(s string) (RepoRef, error) {
	ref := RepoRef{Revision: "main"}
	repo, file, hasFile := strings.Cut(s, ":")
	if hasFile {
		if file == "" || strings.HasPrefix(file, "/") || slices.Contains(strings.Split(file, "/"), "..") {
			return RepoRef{}, fmt.Errorf("%w: %q: FILE after ':' must be a relative path in the repository", ErrRepoRef, s)
		}
		ref.File = file
	}
	repo, rev, hasRev := strings.Cut(repo, "@")
	if hasRev {
		if rev == "" || strings.Contains(rev, "..") {
			return RepoRef{}, fmt.Errorf("%w: %q: REVISION after '@' must be a branch, tag or commit", ErrRepoRef, s)
		}
		ref.Revision = rev
	}
	if !repoName.MatchString(repo) || strings.Contains(repo, "..") || strings.Contains(repo, "--") {
		return RepoRef{}, fmt.Errorf("%w: %q, want ORG/REPO[@REVISION][:FILE] (e.g. Qwen/Qwen2.5-7B-Instruct-GGUF:Q4_K_M)", ErrRepoRef, s)
	}
	ref.Repo = repo
	return ref, nil
}

// treeEntry is one entry of the hub's tree listing,
// GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true
// (huggingface.js ListFileEntry): oid is the git blob id; lfs is present
// for LFS files, with the content's SHA-256 as its oid.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// maxListPages bounds the pages of a tree listing followed (the hub pages
// by 1000 entries with a Link: <...>; rel="next" header).
const maxListPages = 100

// listing is a repository's files at one commit.
type listing struct {
	// Commit is the commit ref.Revision pointed at (40 hex digits): files
	// are downloaded from it, so that a branch moving while a model is
	// downloaded by range cannot mix two versions of a file.
	Commit string `json:"commit"`
	Files  []File `json:"files"`
}

// commitHash is a full git commit id.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// listRepo returns the files of ref.Repo at ref.Revision: the revision's
// commit from GET {endpoint}/api/models/{repo}/revision/{revision} (the
// "sha" of the model info, as huggingface_hub's model_info reads it), then
// the tree at that commit.
func (d downloader) listRepo(ctx context.Context, endpoint string, ref RepoRef) (listing, error) {
	u := endpoint + "/api/models/" + ref.Repo + "/revision/" + url.PathEscape(ref.Revision)
	resp, err := d.get(ctx, u, nil)
	if err != nil {
		return listing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return listing{}, statusError(u, resp)
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil || !commitHash.MatchString(info.SHA) {
		return listing{}, fmt.Errorf("%w: GET %s: want model info with a 40-hex-digit \"sha\" (got %q, %v)", ErrDownload, u, info.SHA, err)
	}
	files, err := d.listTree(ctx, endpoint, ref.Repo, info.SHA)
	return listing{Commit: info.SHA, Files: files}, err
}

// listTree returns the files of repo at commit.
func (d downloader) listTree(ctx context.Context, endpoint, repo, commit string) ([]File, error) {
	ref := RepoRef{Repo: repo, Revision: commit}
	next := endpoint + "/api/models/" + repo + "/tree/" + commit + "?recursive=true"
	var files []File
	for page := 0; next != ""; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("%w: listing %s: more than %d pages", ErrDownload, ref.Repo, maxListPages)
		}
		entries, link, err := d.listPage(ctx, next)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type != "file" {
				continue
			}
			f := File{Path: e.Path, Size: e.Size, BlobID: e.OID}
			if e.LFS != nil {
				f.SHA256, f.Size, f.BlobID = e.LFS.OID, e.LFS.Size, ""
			}
			if f.Path == "" || strings.HasPrefix(f.Path, "/") || slices.Contains(strings.Split(f.Path, "/"), "..") || f.Size < 0 {
				return nil, fmt.Errorf("%w: listing %s: bad entry %q (%d bytes)", ErrDownload, ref.Repo, f.Path, f.Size)
			}
			files = append(files, f)
		}
		next = link
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// listPage fetches one page of a tree listing and its next page's URL.
func (d downloader) listPage(ctx context.Context, u string) ([]treeEntry, string, error) {
	resp, err := d.get(ctx, u, nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", statusError(u, resp)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("%w: GET %s: %w", ErrDownload, u, err)
	}
	var entries []treeEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, "", fmt.Errorf("%w: GET %s: the listing is not a JSON array of files: %w", ErrDownload, u, err)
	}
	next := ""
	for _, l := range resp.Header.Values("Link") {
		for _, part := range strings.Split(l, ",") {
			target, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				next = strings.Trim(strings.TrimSpace(target), "<>")
			}
		}
	}
	if next != "" {
		base, _ := url.Parse(u)
		ref, err := url.Parse(next)
		if err != nil {
			return nil, "", fmt.Errorf("%w: GET %s: bad Link header %q", ErrDownload, u, next)
		}
		next = base.ResolveReference(ref).String()
	}
	return entries, next, nil
}

// Layout is how a model's weights are stored.
type Layout string

// The layouts a repository model can have.
const (
	LayoutGGUF        Layout = "gguf"        // one .gguf file
	LayoutSafetensors Layout = "safetensors" // config.json + model.safetensors or index + shards
)

// RepoModel is the part of a repository a model needs.
type RepoModel struct {
	Ref    RepoRef
	Layout Layout
	// Weights are the files whose tensors are read by range (the .gguf
	// file, or the safetensors files).
	Weights []File
	// Small are files downloaded whole: config.json, the tokenizer files,
	// model.safetensors.index.json. Empty for GGUF (the tokenizer is
	// inside).
	Small []File
	// Index is the safetensors index, when the weights are sharded.
	Index *File
}

// smallFiles are the files of the safetensors layout fetched whole when
// present: the configuration, tokenizer and chat template files blocks/
// and its tokenizers read beside config.json.
var smallFiles = []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer.model",
	"tokenizer_config.json", "special_tokens_map.json"}

// pickModel chooses the files of ref's model among files.
func pickModel(ref RepoRef, files []File) (RepoModel, error) {
	byPath := map[string]File{}
	var ggufs []File
	for _, f := range files {
		byPath[f.Path] = f
		if strings.HasSuffix(strings.ToLower(f.Path), ".gguf") {
			ggufs = append(ggufs, f)
		}
	}
	m := RepoModel{Ref: ref}
	names := func(fs []File) string {
		var s []string
		for _, f := range fs {
			s = append(s, f.Path)
		}
		return strings.Join(s, ", ")
	}
	file := ref.File
	wantST := file == "config.json" || strings.HasSuffix(file, ".safetensors") || strings.HasSuffix(file, ".safetensors.index.json")
	if file != "" && !wantST {
		if f, ok := byPath[file]; ok && strings.HasSuffix(strings.ToLower(file), ".gguf") {
			m.Layout, m.Weights = LayoutGGUF, []File{f}
			return m, nil
		}
		var match []File
		for _, f := range ggufs {
			if strings.Contains(strings.ToLower(path.Base(f.Path)), strings.ToLower(file)) {
				match = append(match, f)
			}
		}
		switch len(match) {
		case 1:
			m.Layout, m.Weights = LayoutGGUF, match
			return m, nil
		case 0:
			if len(ggufs) == 0 {
				return RepoModel{}, fmt.Errorf("%w: %s has no .gguf file to match %q", ErrNoModel, ref.Repo, file)
			}
			return RepoModel{}, fmt.Errorf("%w: no .gguf file of %s matches %q; it has %s", ErrNoModel, ref.Repo, file, names(ggufs))
		default:
			return RepoModel{}, fmt.Errorf("%w: %q matches %d .gguf files of %s: %s; name one with %s:FILE",
				ErrNoModel, file, len(match), ref.Repo, names(match), ref.Repo)
		}
	}
	if !wantST && len(ggufs) == 1 {
		m.Layout, m.Weights = LayoutGGUF, ggufs
		return m, nil
	}
	if !wantST && len(ggufs) > 1 {
		return RepoModel{}, fmt.Errorf("%w: %s has %d .gguf files: %s; pick one with %s:FILE (a path or a quantization such as Q4_K_M)",
			ErrNoModel, ref.Repo, len(ggufs), names(ggufs), ref.Repo)
	}
	// The safetensors layout, as blocks/ reads a Hugging Face directory.
	if _, ok := byPath["config.json"]; !ok {
		return RepoModel{}, fmt.Errorf("%w: %s has neither a .gguf file nor config.json with safetensors weights", ErrNoModel, ref.Repo)
	}
	m.Layout = LayoutSafetensors
	for _, name := range smallFiles {
		if f, ok := byPath[name]; ok {
			m.Small = append(m.Small, f)
		}
	}
	if f, ok := byPath["model.safetensors"]; ok {
		m.Weights = []File{f}
		return m, nil
	}
	idx, ok := byPath["model.safetensors.index.json"]
	if !ok {
		return RepoModel{}, fmt.Errorf("%w: %s has config.json but neither model.safetensors nor model.safetensors.index.json", ErrNoModel, ref.Repo)
	}
	m.Index = &idx
	m.Small = append(m.Small, idx)
	return m, nil
}

// shardsOf returns the shard files an index names, checked against the
// listing.
func shardsOf(ref RepoRef, raw []byte, files []File) ([]File, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s: model.safetensors.index.json: %w", ErrNoModel, ref.Repo, err)
	}
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	seen := map[string]bool{}
	var shards []File
	for _, name := range idx.WeightMap {
		if seen[name] {
			continue
		}
		seen[name] = true
		f, ok := byPath[name]
		if !ok || path.Base(name) != name {
			return nil, fmt.Errorf("%w: %s: model.safetensors.index.json names shard %q, which the repository does not hold at its top level",
				ErrNoModel, ref.Repo, name)
		}
		shards = append(shards, f)
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: %s: model.safetensors.index.json maps no tensor", ErrNoModel, ref.Repo)
	}
	slices.SortFunc(shards, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return shards, nil
}
