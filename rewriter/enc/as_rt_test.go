package enc

import "fmt"

// asCasesRT are the GNU as cases of templates_rt.go, appended to asCases.
func asCasesRT(targets []asTarget) []asCase {
	var cs []asCase
	add := func(asm string, emit func(b *Buf)) { cs = append(cs, asCase{asm, emit}) }
	allRegs := make([]Reg, 16)
	for i := range allRegs {
		allRegs[i] = Reg(i)
	}
	d8s := []int8{0, 1, -1, 8, -8, 127, -128}
	for _, r := range allRegs {
		for i, base := range allRegs {
			d := d8s[(int(r)+i)%len(d8s)]
			add(fmt.Sprintf("{disp8} mov %%%s, %d(%%%s)", r, d, base), func(b *Buf) { b.MovMemFromRegD8(base, d, r) })
			add(fmt.Sprintf("{disp8} mov %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.MovRegFromMemD8(r, base, d) })
			add(fmt.Sprintf("{disp8} cmp %%%s, %d(%%%s)", r, d, base), func(b *Buf) { b.CmpMemRegD8(base, d, r) })
			add(fmt.Sprintf("{disp8} cmp %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.CmpRegMemD8(r, base, d) })
			add(fmt.Sprintf("{disp8} sub %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.SubRegMemD8(r, base, d) })
			add(fmt.Sprintf("{disp8} add %%%s, %d(%%%s)", r, d, base), func(b *Buf) { b.AddMemRegD8(base, d, r) })
			add(fmt.Sprintf("{disp8} lea %d(%%%s), %%%s", d, base, r), func(b *Buf) { b.LeaRegD8(r, base, d) })
			add(fmt.Sprintf("{disp8} cmpxchg %%%s, %d(%%%s)", r, d, base), func(b *Buf) { b.CmpxchgMemRegD8(base, d, r) })
			dd := asDisps[(int(r)+i)%len(asDisps)]
			add(fmt.Sprintf("{disp32} mov %d(%%%s), %%%s", dd, base, r), func(b *Buf) { b.MovRegFromMemD32(r, base, dd) })
			if base != RSP {
				for _, s := range []uint8{1, 2, 4, 8} {
					add(fmt.Sprintf("{disp8} lea %d(%%%s,%%%s,%d), %%%s", d, r, base, s, allRegs[(i+3)%16]),
						func(b *Buf) { b.LeaRegIdxD8(allRegs[(i+3)%16], r, base, s, d) })
				}
			}
			add(fmt.Sprintf("cmp %%%s, %%%s", r, base), func(b *Buf) { b.CmpRegReg(base, r) })
			add(fmt.Sprintf("or %%%s, %%%s", r, base), func(b *Buf) { b.OrRegReg(base, r) })
		}
		for _, d := range d8s {
			add(fmt.Sprintf("{disp8} incq %d(%%%s)", d, r), func(b *Buf) { b.IncMemD8(r, d) })
			add(fmt.Sprintf("{disp8} incl %d(%%%s)", d, r), func(b *Buf) { b.IncMem32D8(r, d) })
			add(fmt.Sprintf("{disp8} decq %d(%%%s)", d, r), func(b *Buf) { b.DecMemD8(r, d) })
			for _, v := range []int32{0, 0x12345678, -129} {
				add(fmt.Sprintf("{disp8} cmpq %s, %d(%%%s)", imm(v), d, r), func(b *Buf) { b.CmpMemImm32D8(r, d, v) })
				add(fmt.Sprintf("{disp8} cmpl %s, %d(%%%s)", imm(v), d, r), func(b *Buf) { b.CmpMem32Imm32D8(r, d, v) })
				add(fmt.Sprintf("{disp8} movq %s, %d(%%%s)", imm(v), d, r), func(b *Buf) { b.MovMemImm32D8(r, d, v) })
			}
		}
		for _, d := range asDisps {
			add(fmt.Sprintf("{disp32} incq %d(%%%s)", d, r), func(b *Buf) { b.IncMemD32(r, d) })
			add(fmt.Sprintf("cmp %%gs:%d, %%%s", d, r), func(b *Buf) { b.CmpRegGS(r, d) })
			add(fmt.Sprintf("xadd %%%s, %%gs:%d", r, d), func(b *Buf) { b.XaddGSReg(d, r) })
			add(fmt.Sprintf("or %%gs:%d, %%%s", d, r), func(b *Buf) { b.OrRegGS(r, d) })
			add(fmt.Sprintf("sub %%gs:%d, %%%s", d, r), func(b *Buf) { b.SubRegGS(r, d) })
			add(fmt.Sprintf("add %%gs:%d, %%%s", d, r), func(b *Buf) { b.AddRegGS(r, d) })
			add(fmt.Sprintf("mov %%fs:%d, %%%s", d, r), func(b *Buf) { b.MovRegFromFS(r, d) })
		}
		add(fmt.Sprintf("test %%%s, %%%s", reg32Names[r], reg32Names[r]), func(b *Buf) { b.TestReg32(r) })
		add(fmt.Sprintf("not %%%s", r), func(b *Buf) { b.NotReg(r) })
		for _, n := range []uint8{2, 4, 32, 63} {
			add(fmt.Sprintf("shl $%d, %%%s", n, r), func(b *Buf) { b.ShlRegImm(r, n) })
		}
		for _, src := range allRegs {
			add(fmt.Sprintf("bsr %%%s, %%%s", src, r), func(b *Buf) { b.BsrRegReg(r, src) })
		}
		for _, v := range []int8{0, 1, -1, 127, -128} {
			add(fmt.Sprintf("or $%d, %%%s", v, r), func(b *Buf) { b.OrRegImm8(r, v) })
		}
		for _, tg := range targets {
			add(fmt.Sprintf("mov (%s)(%%rip), %%%s", tg.asm, r), func(b *Buf) { b.MovRegFromRIP(r, tg.t) })
		}
	}
	for i, base := range allRegs {
		for j, index := range allRegs {
			if index == RSP {
				continue
			}
			d, r := asDisps[(i+j)%len(asDisps)], allRegs[(i*5+j)%16]
			v := []int8{0, 1, -1, 127, -128}[(i+j)%5]
			add(fmt.Sprintf("{disp32} cmpq $%d, %d(%%%s,%%%s)", v, d, base, index), func(b *Buf) { b.CmpMemIdxImm8(base, index, d, v) })
			add(fmt.Sprintf("{disp32} cmpxchg %%%s, %d(%%%s,%%%s)", r, d, base, index), func(b *Buf) { b.CmpxchgMemIdxReg(base, index, d, r) })
		}
	}
	for _, tg := range targets {
		for _, v := range []int8{0, 1, -1, 127, -128} {
			add(fmt.Sprintf("cmpq $%d, (%s)(%%rip)", v, tg.asm), func(b *Buf) { b.CmpRIPImm8(tg.t, v) })
		}
	}
	add("rdtsc", (*Buf).Rdtsc)
	add("ud2", (*Buf).Ud2)
	for _, n := range []int{0, 1, 7, 64} {
		add(fmt.Sprintf(".zero %d", n), func(b *Buf) { b.Zeros(n) })
	}
	return cs
}
