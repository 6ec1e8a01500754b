package cfg

import "github.com/blpp/blpp/cfg/x86"

// Calls that keep caller-saved registers. gcc's interprocedural register
// allocation (-fipa-ra, on at -O2) lets a caller keep a value in a
// caller-saved register across a direct call to a function of its own
// unit that does not write it: libbfd's _bfd_elf_parse_eh_frame keeps a
// switch's table base in %r11 across `call get_DW_EH_PE_width` and comes
// back round a loop to the `jmp *`. The data flow of constants
// (regconst.go) takes such a call to clobber only what the callee can
// write. Only the constants use this: register liveness still takes
// every call to read every register (regslive.go).

// maxClobberDepth bounds how deep calls are followed; a deeper callee
// clobbers every caller-saved register.
const maxClobberDepth = 4

// callClobbers returns the caller-saved registers a direct call to
// target may change: those the procedure entered there, or any procedure
// it calls or jumps to, writes, found by decoding its ranges linearly
// (padding and data between them only add registers). Anything that
// cannot be followed (an indirect call or jump, a PLT stub, an address
// that is no procedure's entry, undecodable bytes, a cycle, depth)
// clobbers them all.
func (s *slicer) callClobbers(target uint64) RegSet {
	if s.clobbers == nil {
		s.clobbers = map[uint64]RegSet{}
	}
	return s.clobbersAt(target, 0) & callerSavedSet
}

// callerSavedSet is callerSaved as a RegSet.
var callerSavedSet = func() RegSet {
	var s RegSet
	for f, c := range callerSaved {
		if c {
			s |= 1 << f
		}
	}
	return s
}()

func (s *slicer) clobbersAt(target uint64, depth int) RegSet {
	if w, ok := s.clobbers[target]; ok {
		return w
	}
	f := s.bd.env.funcAt(target)
	if f == nil || f.PLT || depth >= maxClobberDepth {
		return AllRegs
	}
	s.clobbers[target] = AllRegs // a cycle back here clobbers all
	var w RegSet
	ranges := f.Ranges()
	inside := func(a uint64) bool {
		for _, r := range ranges {
			if a >= r.Addr && a < r.End() {
				return true
			}
		}
		return false
	}
	for _, r := range ranges {
		code := s.bd.b.Bytes(r.Addr, int(r.Size))
		if code == nil {
			return AllRegs
		}
		for off := 0; off < len(code) && w != AllRegs; {
			in, err := x86.DecodeInfo(code[off:], r.Addr+uint64(off))
			if err != nil {
				return AllRegs
			}
			off += in.Len
			switch in.Kind {
			case x86.CallIndirect, x86.JmpIndirect:
				return AllRegs
			case x86.Call:
				w |= s.clobbersAt(in.Target, depth+1)
				continue
			case x86.Jmp, x86.Jcc:
				if !inside(in.Target) {
					w |= s.clobbersAt(in.Target, depth+1)
				}
			}
			set, _ := writtenRegs(&in)
			w |= set | implicitWrites(&in)
		}
	}
	s.clobbers[target] = w
	return w
}
