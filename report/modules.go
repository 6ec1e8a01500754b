package report

// This file holds what is particular to profiles of several modules
// (decision 81): finding their files (OpenModules), module!func names,
// and narrowing a model to some modules (blpp --module, per-module
// exports).

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/meta"
)

// FilterModules narrows every view of m to the functions of the modules
// whose name re matches: FuncIDs lists only theirs; the calling contexts
// of other modules' functions are taken out of the tree, their children
// joined to the nearest context kept (entered at the call site through
// which the kept caller left for the modules taken out), so that a
// library's callback into the program still hangs under the program's
// caller; stacks lose the frames of other modules, and stacks whose leaf
// is of another module are dropped. Totals stay those of the whole
// process, so shares are of everything the profile counts, and an
// inclusive value still holds the callees taken out. It is an error when
// re matches no module.
func (m *Model) FilterModules(re *regexp.Regexp) error {
	keep := make([]bool, len(m.Modules))
	any := false
	var names []string
	for k := range m.Modules {
		keep[k] = re.MatchString(m.Modules[k].Name)
		any = any || keep[k]
		names = append(names, m.Modules[k].Name)
	}
	if !any {
		return fmt.Errorf("--module %s matches none of the profile's modules (%s)", re, strings.Join(names, ", "))
	}
	m.filter(keep, true)
	return nil
}

// ModuleView is the model of module k alone, for the exports written per
// module (BOLT fdata, LLVM sample profiles): its functions, its debug
// info and symbols as the model's own (Table, Debug, Symbols, File,
// Binary), the contexts of its functions, those entered from another
// module made roots (entered from a caller it does not know), and stacks
// cut where they leave the module. m is not changed, but for its stacks,
// built if they were not.
func (m *Model) ModuleView(k int) *Model {
	// The views share the stacks, built once here, each taking its
	// module's out of them (decision 139).
	m.Stacks()
	v := *m
	keep := make([]bool, len(m.Modules))
	keep[k] = true
	v.filter(keep, false)
	mod := &m.Modules[k]
	v.Binary, v.Table, v.Debug, v.Symbols, v.File = mod.Path, mod.Table, mod.Debug, mod.Symbols, mod.File
	return &v
}

// filter keeps the contexts and stacks of the modules keep says, and the
// functions FuncIDs lists. With splice, a kept context under contexts
// taken out hangs under the nearest kept one; without, it becomes a root
// and a stack ends at its first frame of another module.
func (m *Model) filter(keep []bool, splice bool) {
	m.hidden = make(map[uint32]bool)
	for k := range keep {
		if !keep[k] {
			m.hidden[uint32(k)] = true
		}
	}
	// Contexts: parents come before children, so one pass maps each old
	// node to its new index, or to its nearest kept ancestor's.
	newIdx := make([]int, len(m.Nodes))      // -1: taken out
	anchor := make([]int, len(m.Nodes))      // nearest kept node at or above, -1 none
	exitSite := make([]uint64, len(m.Nodes)) // for a taken-out node: the call site leaving the kept anchor
	var nodes []CNode
	for i := range m.Nodes {
		n := m.Nodes[i]
		up := -1
		if n.Parent >= 0 {
			up = anchor[n.Parent]
		}
		if m.hidden[n.Module] {
			newIdx[i], anchor[i] = -1, up
			exitSite[i] = n.CallSite
			if n.Parent >= 0 && newIdx[n.Parent] < 0 {
				exitSite[i] = exitSite[n.Parent]
			}
			continue
		}
		if !splice && n.Parent >= 0 && newIdx[n.Parent] < 0 {
			up, n.CallSite = -1, 0
		}
		if splice && n.Parent >= 0 && newIdx[n.Parent] < 0 {
			n.CallSite = exitSite[n.Parent]
		}
		n.ID = len(nodes)
		n.Parent = -1
		n.Depth = 0
		n.Children = nil
		if up >= 0 {
			n.Parent = newIdx[up]
		}
		newIdx[i], anchor[i] = n.ID, i
		nodes = append(nodes, n)
	}
	m.Roots = nil
	for i := range nodes {
		n := &nodes[i]
		if n.Parent < 0 {
			m.Roots = append(m.Roots, i)
			continue
		}
		p := &nodes[n.Parent]
		p.Children = append(p.Children, i)
		n.Depth = p.Depth + 1
	}
	m.Nodes = nodes
	// Stacks: the frames of kept modules, now or when they are built.
	if !m.stacksBuilt {
		m.stackFilters = append(append([]stackFilter(nil), m.stackFilters...), stackFilter{m.hidden, splice})
		return
	}
	m.stacks = filterStacks(m.stacks, m.hidden, splice)
}

// qualifyNames copies t with every function named module!name.
func qualifyNames(t *meta.Table, module string) *meta.Table {
	c := *t
	c.Funcs = append([]meta.Func(nil), t.Funcs...)
	// The names in one string: a string each was an allocation per
	// function of every module.
	n := 0
	for i := range c.Funcs {
		n += len(module) + 1 + len(c.Funcs[i].Name)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range c.Funcs {
		b.WriteString(module)
		b.WriteByte('!')
		b.WriteString(c.Funcs[i].Name)
	}
	all, at := b.String(), 0
	for i := range c.Funcs {
		end := at + len(module) + 1 + len(c.Funcs[i].Name)
		c.Funcs[i].Name = all[at:end]
		at = end
	}
	return &c
}

// RawName is a function name without its module qualifier (module!func),
// as the symbol table has it: the name tools that match on symbols want.
func RawName(name string) string {
	if i := strings.IndexByte(name, '!'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// splitModule splits module!func; module is "" for a bare name.
func splitModule(name string) (module, fn string) {
	if i := strings.IndexByte(name, '!'); i >= 0 {
		return name[:i+1], name[i+1:]
	}
	return "", name
}

// OpenModules finds the instrumented files of the library modules of p
// (every module but the executable, tag 0): a file of libs whose
// build-id is the module's, or else the file at the path the profile
// recorded (NewModelWith then refuses it if its build-id differs). A
// module with neither is refused, naming it; a file of libs that is no
// module of the profile is ignored. The caller closes the files
// (CloseModules).
//
// With need, the modules' metadata holds the graphs of those functions
// alone (LoadMetaOf); the files of libs, matched by build-id once they
// are read, are read whole.
func OpenModules(p *cct.Profile, libs []string, need FuncSet) (map[uint32]ModuleFile, error) {
	out := map[uint32]ModuleFile{}
	byID := map[string]ModuleFile{}
	fail := func(err error) (map[uint32]ModuleFile, error) {
		for _, mf := range byID {
			mf.File.Close()
		}
		CloseModules(out)
		return nil, err
	}
	loaded, errs := loadMetas(libs, nil, nil)
	for _, err := range errs {
		if err != nil {
			closeLoaded(loaded)
			return nil, fmt.Errorf("--lib %w", err)
		}
	}
	for i, path := range libs {
		byID[string(loaded[i].Table.InstrID)] = ModuleFile{Path: path, Table: loaded[i].Table, File: loaded[i].File}
	}
	var rest []cct.Module // modules to load from the paths the profile recorded
	for _, e := range p.Modules {
		if e.Tag == 0 {
			continue
		}
		if mf, ok := byID[string(e.BuildID)]; ok {
			delete(byID, string(e.BuildID))
			out[e.Tag] = mf
			continue
		}
		if e.Path == "" {
			return fail(fmt.Errorf("module %s (tag %d, build-id %x): the profile records no path: give its instrumented file with --lib", e.Name(), e.Tag, e.BuildID))
		}
		rest = append(rest, e)
	}
	paths, tags := make([]string, len(rest)), make([]uint32, len(rest))
	for i, e := range rest {
		paths[i], tags[i] = e.Path, e.Tag
	}
	loaded, errs = loadMetas(paths, tags, need)
	for i, e := range rest {
		if errs[i] != nil {
			closeLoaded(loaded)
			return fail(fmt.Errorf("module %s (tag %d, build-id %x): %w (give its instrumented file with --lib)", e.Name(), e.Tag, e.BuildID, errs[i]))
		}
		out[e.Tag] = ModuleFile{Path: e.Path, Table: loaded[i].Table, File: loaded[i].File}
		loaded[i].File = nil // out's now
	}
	for _, mf := range byID { // no module of this profile (blpp diff gives both runs' files)
		mf.File.Close()
	}
	return out, nil
}

// loadMetas is LoadMetaOf every path (module tags[i], or whole without
// tags), on every processor (a whole-process profile has a module per
// library, some of them with a hundred thousand functions): the tables
// and files in the paths' order, and each one's error.
func loadMetas(paths []string, tags []uint32, need FuncSet) ([]ModuleFile, []error) {
	mods, errs := make([]ModuleFile, len(paths)), make([]error, len(paths))
	par.Each(len(paths), 0, func(i int) {
		if tags == nil {
			mods[i].Table, mods[i].File, errs[i] = LoadMeta(paths[i])
		} else {
			mods[i].Table, mods[i].File, errs[i] = LoadMetaOf(paths[i], tags[i], need)
		}
	})
	return mods, errs
}

// FuncSet holds functions by global id (cct.Fid): those a profile names
// (ProfileFuncs), whose metadata is all a view of the functions alone
// reads. A nil set holds every function.
type FuncSet map[uint32]struct{}

// ProfileFuncs returns the functions p names: in records (callers
// included, which are records too), partial activations and fork
// prefixes.
func ProfileFuncs(p *cct.Profile) FuncSet {
	s := FuncSet{}
	for ti := range p.Threads {
		t := &p.Threads[ti]
		for i := range t.Records {
			s[t.Records[i].Func] = struct{}{}
		}
		for i := range t.Partials {
			s[t.Partials[i].Func] = struct{}{}
		}
		for i := range t.Prefixes {
			s[t.Prefixes[i].Func] = struct{}{}
		}
	}
	return s
}

// of is the membership test of module tag's local function indices
// (meta.DecodeSome's need), nil for the nil set.
func (s FuncSet) of(tag uint32) func(uint32) bool {
	if s == nil {
		return nil
	}
	return func(local uint32) bool {
		_, ok := s[cct.Fid(tag, local)]
		return ok
	}
}

// closeLoaded closes the files loadMetas opened that nothing took.
func closeLoaded(mods []ModuleFile) {
	for _, m := range mods {
		if m.File != nil {
			m.File.Close()
		}
	}
}

// CloseModules closes the files OpenModules opened.
func CloseModules(libs map[uint32]ModuleFile) {
	for _, mf := range libs {
		if mf.File != nil {
			mf.File.Close()
		}
	}
}
