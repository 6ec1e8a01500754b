package report

// This file is the one place function names are made readable: every
// view, page and export that shows a name to people calls DisplayName
// (or Model.DisplayName), and the exports read by tools that match on
// linkage names (LLVM sample profiles, BOLT fdata, pprof, which
// demangles by itself) keep the raw name.

import (
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"
)

// NameOptions say how function names are shown to people.
type NameOptions struct {
	// Raw shows names as the symbol table has them (blpp --no-demangle).
	Raw bool
}

// DisplayName is raw as people read it: an Itanium C++ name (_Z…, with
// GCC's clone suffixes .isra.0, .cold, .constprop.0, .part.0) or a Rust
// name (legacy _ZN…17h<hash>E, v0 _R…) demangled as c++filt does it, with
// parameter and template argument lists kept so overloads and
// instantiations stay apart, and clones shown as "[clone .cold]". A
// "@…" suffix (@plt, a symbol version) is kept after the demangled name.
// Anything else, and every name under o.Raw, is returned unchanged.
func DisplayName(raw string, o NameOptions) string {
	// module!name in a profile of several modules: the module as it is.
	if mod, fn := splitModule(raw); mod != "" {
		return mod + DisplayName(fn, o)
	}
	if o.Raw || !(strings.HasPrefix(raw, "_Z") || strings.HasPrefix(raw, "_R")) {
		return raw
	}
	name, at := raw, ""
	if i := strings.IndexByte(raw, '@'); i > 0 {
		name, at = raw[:i], raw[i:]
	}
	return demangleOnce(name) + at
}

// demangledNames holds what demangleOnce has demangled: the views name the
// same functions over and over (a whole-process profile's hot view put
// 87 of its 140 s into demangling the same names, decision 139).
var demangledNames sync.Map // string → string

// demangleOnce is name demangled, or name when it does not demangle.
// Names are hostile input: the output is bounded at 64 KiB (template
// substitutions can otherwise grow it without limit).
func demangleOnce(name string) string {
	if d, ok := demangledNames.Load(name); ok {
		return d.(string)
	}
	d := demangle.Filter(name, demangle.MaxLength(16))
	demangledNames.Store(name, d)
	return d
}

// demangled is raw demangled, or "" when it does not demangle (the
// module qualifier dropped): the JSON's
// "demangled" fields, written beside the raw name whatever NameOptions
// say.
func demangled(raw string) string {
	raw = RawName(raw)
	if d := DisplayName(raw, NameOptions{}); d != raw {
		return d
	}
	return ""
}

// matchesName reports whether target names the function whose symbol is
// raw: the symbol itself or its demangled form, whatever NameOptions say
// (--context, annotate FUNC).
func matchesName(raw, target string) bool {
	if raw == target || DisplayName(raw, NameOptions{}) == target {
		return true
	}
	// A bare name matches the function of any module.
	if mod, fn := splitModule(raw); mod != "" && !strings.Contains(target, "!") {
		return matchesName(fn, target)
	}
	return false
}

// DisplayName is raw as the model shows names to people (m.Names).
func (m *Model) DisplayName(raw string) string { return DisplayName(raw, m.Names) }
