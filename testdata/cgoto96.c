/*
 * cgoto96.c - a byte-code interpreter the size of CPython's dispatch:
 * 96 handlers, each ending with its own computed goto through one table
 * of all of them (GCC's labels as values).  With every handler reaching
 * every other, the paths through the dispatch overflow any limit, and
 * most dispatch edges end paths: the shape where the dispatch jumps share
 * their path-end code per handler (decision 134).
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define NOPS 96

NOINLINE unsigned long mix(unsigned long v)
{
	return v ^ (v >> 29);
}

/* Runs code until the halt opcode (95) and returns the accumulator. */
NOINLINE unsigned long run(const unsigned char *code, unsigned long acc)
{
	static const void *const table[NOPS] = {
		&&op_0,
		&&op_1,
		&&op_2,
		&&op_3,
		&&op_4,
		&&op_5,
		&&op_6,
		&&op_7,
		&&op_8,
		&&op_9,
		&&op_10,
		&&op_11,
		&&op_12,
		&&op_13,
		&&op_14,
		&&op_15,
		&&op_16,
		&&op_17,
		&&op_18,
		&&op_19,
		&&op_20,
		&&op_21,
		&&op_22,
		&&op_23,
		&&op_24,
		&&op_25,
		&&op_26,
		&&op_27,
		&&op_28,
		&&op_29,
		&&op_30,
		&&op_31,
		&&op_32,
		&&op_33,
		&&op_34,
		&&op_35,
		&&op_36,
		&&op_37,
		&&op_38,
		&&op_39,
		&&op_40,
		&&op_41,
		&&op_42,
		&&op_43,
		&&op_44,
		&&op_45,
		&&op_46,
		&&op_47,
		&&op_48,
		&&op_49,
		&&op_50,
		&&op_51,
		&&op_52,
		&&op_53,
		&&op_54,
		&&op_55,
		&&op_56,
		&&op_57,
		&&op_58,
		&&op_59,
		&&op_60,
		&&op_61,
		&&op_62,
		&&op_63,
		&&op_64,
		&&op_65,
		&&op_66,
		&&op_67,
		&&op_68,
		&&op_69,
		&&op_70,
		&&op_71,
		&&op_72,
		&&op_73,
		&&op_74,
		&&op_75,
		&&op_76,
		&&op_77,
		&&op_78,
		&&op_79,
		&&op_80,
		&&op_81,
		&&op_82,
		&&op_83,
		&&op_84,
		&&op_85,
		&&op_86,
		&&op_87,
		&&op_88,
		&&op_89,
		&&op_90,
		&&op_91,
		&&op_92,
		&&op_93,
		&&op_94,
		&&op_95,
	};
	const unsigned char *pc = code;
#define DISPATCH() goto *table[*pc++]
	DISPATCH();
op_0:
	acc = mix(acc) * 3 + (acc >> 1);
	DISPATCH();
op_1:
	acc = acc * 5 + (acc >> 2) + 1;
	DISPATCH();
op_2:
	acc = acc * 7 + (acc >> 3) + 2;
	DISPATCH();
op_3:
	acc = acc * 9 + (acc >> 4) + 3;
	DISPATCH();
op_4:
	acc = acc * 11 + (acc >> 5) + 4;
	DISPATCH();
op_5:
	acc = acc * 13 + (acc >> 6) + 5;
	DISPATCH();
op_6:
	acc = acc * 15 + (acc >> 7) + 6;
	DISPATCH();
op_7:
	acc = acc * 17 + (acc >> 8) + 7;
	DISPATCH();
op_8:
	acc = acc * 19 + (acc >> 9) + 8;
	DISPATCH();
op_9:
	acc = acc * 21 + (acc >> 10) + 9;
	DISPATCH();
op_10:
	acc = acc * 23 + (acc >> 11) + 10;
	DISPATCH();
op_11:
	acc = acc * 25 + (acc >> 12) + 11;
	DISPATCH();
op_12:
	acc = acc * 27 + (acc >> 13) + 12;
	DISPATCH();
op_13:
	acc = acc * 29 + (acc >> 1) + 13;
	DISPATCH();
op_14:
	acc = acc * 31 + (acc >> 2) + 14;
	DISPATCH();
op_15:
	acc = acc * 33 + (acc >> 3) + 15;
	DISPATCH();
op_16:
	acc = acc * 35 + (acc >> 4) + 16;
	DISPATCH();
op_17:
	acc = acc * 37 + (acc >> 5) + 17;
	DISPATCH();
op_18:
	acc = acc * 39 + (acc >> 6) + 18;
	DISPATCH();
op_19:
	acc = acc * 41 + (acc >> 7) + 19;
	DISPATCH();
op_20:
	acc = acc * 43 + (acc >> 8) + 20;
	DISPATCH();
op_21:
	acc = acc * 45 + (acc >> 9) + 21;
	DISPATCH();
op_22:
	acc = acc * 47 + (acc >> 10) + 22;
	DISPATCH();
op_23:
	acc = acc * 49 + (acc >> 11) + 23;
	DISPATCH();
op_24:
	acc = acc * 51 + (acc >> 12) + 24;
	DISPATCH();
op_25:
	acc = acc * 53 + (acc >> 13) + 25;
	DISPATCH();
op_26:
	acc = acc * 55 + (acc >> 1) + 26;
	DISPATCH();
op_27:
	acc = acc * 57 + (acc >> 2) + 27;
	DISPATCH();
op_28:
	acc = acc * 59 + (acc >> 3) + 28;
	DISPATCH();
op_29:
	acc = acc * 61 + (acc >> 4) + 29;
	DISPATCH();
op_30:
	acc = acc * 63 + (acc >> 5) + 30;
	DISPATCH();
op_31:
	acc = acc * 65 + (acc >> 6) + 31;
	DISPATCH();
op_32:
	acc = acc * 67 + (acc >> 7) + 32;
	DISPATCH();
op_33:
	acc = acc * 69 + (acc >> 8) + 33;
	DISPATCH();
op_34:
	acc = acc * 71 + (acc >> 9) + 34;
	DISPATCH();
op_35:
	acc = acc * 73 + (acc >> 10) + 35;
	DISPATCH();
op_36:
	acc = acc * 75 + (acc >> 11) + 36;
	DISPATCH();
op_37:
	acc = acc * 77 + (acc >> 12) + 37;
	DISPATCH();
op_38:
	acc = acc * 79 + (acc >> 13) + 38;
	DISPATCH();
op_39:
	acc = acc * 81 + (acc >> 1) + 39;
	DISPATCH();
op_40:
	acc = acc * 83 + (acc >> 2) + 40;
	DISPATCH();
op_41:
	acc = acc * 85 + (acc >> 3) + 41;
	DISPATCH();
op_42:
	acc = acc * 87 + (acc >> 4) + 42;
	DISPATCH();
op_43:
	acc = acc * 89 + (acc >> 5) + 43;
	DISPATCH();
op_44:
	acc = acc * 91 + (acc >> 6) + 44;
	DISPATCH();
op_45:
	acc = acc * 93 + (acc >> 7) + 45;
	DISPATCH();
op_46:
	acc = acc * 95 + (acc >> 8) + 46;
	DISPATCH();
op_47:
	acc = acc * 97 + (acc >> 9) + 47;
	DISPATCH();
op_48:
	acc = acc * 99 + (acc >> 10) + 48;
	DISPATCH();
op_49:
	acc = acc * 101 + (acc >> 11) + 49;
	DISPATCH();
op_50:
	acc = acc * 103 + (acc >> 12) + 50;
	DISPATCH();
op_51:
	acc = acc * 105 + (acc >> 13) + 51;
	DISPATCH();
op_52:
	acc = acc * 107 + (acc >> 1) + 52;
	DISPATCH();
op_53:
	acc = acc * 109 + (acc >> 2) + 53;
	DISPATCH();
op_54:
	acc = acc * 111 + (acc >> 3) + 54;
	DISPATCH();
op_55:
	acc = acc * 113 + (acc >> 4) + 55;
	DISPATCH();
op_56:
	acc = acc * 115 + (acc >> 5) + 56;
	DISPATCH();
op_57:
	acc = acc * 117 + (acc >> 6) + 57;
	DISPATCH();
op_58:
	acc = acc * 119 + (acc >> 7) + 58;
	DISPATCH();
op_59:
	acc = acc * 121 + (acc >> 8) + 59;
	DISPATCH();
op_60:
	acc = acc * 123 + (acc >> 9) + 60;
	DISPATCH();
op_61:
	acc = acc * 125 + (acc >> 10) + 61;
	DISPATCH();
op_62:
	acc = acc * 127 + (acc >> 11) + 62;
	DISPATCH();
op_63:
	acc = acc * 129 + (acc >> 12) + 63;
	DISPATCH();
op_64:
	acc = acc * 131 + (acc >> 13) + 64;
	DISPATCH();
op_65:
	acc = acc * 133 + (acc >> 1) + 65;
	DISPATCH();
op_66:
	acc = acc * 135 + (acc >> 2) + 66;
	DISPATCH();
op_67:
	acc = acc * 137 + (acc >> 3) + 67;
	DISPATCH();
op_68:
	acc = acc * 139 + (acc >> 4) + 68;
	DISPATCH();
op_69:
	acc = acc * 141 + (acc >> 5) + 69;
	DISPATCH();
op_70:
	acc = acc * 143 + (acc >> 6) + 70;
	DISPATCH();
op_71:
	acc = acc * 145 + (acc >> 7) + 71;
	DISPATCH();
op_72:
	acc = acc * 147 + (acc >> 8) + 72;
	DISPATCH();
op_73:
	acc = acc * 149 + (acc >> 9) + 73;
	DISPATCH();
op_74:
	acc = acc * 151 + (acc >> 10) + 74;
	DISPATCH();
op_75:
	acc = acc * 153 + (acc >> 11) + 75;
	DISPATCH();
op_76:
	acc = acc * 155 + (acc >> 12) + 76;
	DISPATCH();
op_77:
	acc = acc * 157 + (acc >> 13) + 77;
	DISPATCH();
op_78:
	acc = acc * 159 + (acc >> 1) + 78;
	DISPATCH();
op_79:
	acc = acc * 161 + (acc >> 2) + 79;
	DISPATCH();
op_80:
	acc = acc * 163 + (acc >> 3) + 80;
	DISPATCH();
op_81:
	acc = acc * 165 + (acc >> 4) + 81;
	DISPATCH();
op_82:
	acc = acc * 167 + (acc >> 5) + 82;
	DISPATCH();
op_83:
	acc = acc * 169 + (acc >> 6) + 83;
	DISPATCH();
op_84:
	acc = acc * 171 + (acc >> 7) + 84;
	DISPATCH();
op_85:
	acc = acc * 173 + (acc >> 8) + 85;
	DISPATCH();
op_86:
	acc = acc * 175 + (acc >> 9) + 86;
	DISPATCH();
op_87:
	acc = acc * 177 + (acc >> 10) + 87;
	DISPATCH();
op_88:
	acc = acc * 179 + (acc >> 11) + 88;
	DISPATCH();
op_89:
	acc = acc * 181 + (acc >> 12) + 89;
	DISPATCH();
op_90:
	acc = acc * 183 + (acc >> 13) + 90;
	DISPATCH();
op_91:
	acc = acc * 185 + (acc >> 1) + 91;
	DISPATCH();
op_92:
	acc = acc * 187 + (acc >> 2) + 92;
	DISPATCH();
op_93:
	acc = acc * 189 + (acc >> 3) + 93;
	DISPATCH();
op_94:
	acc = acc * 191 + (acc >> 4) + 94;
	DISPATCH();
op_95:
	return acc;
}

int main(void)
{
	static unsigned char code[4001];
	unsigned long seed = 12345, sum = 0;
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 4000; i++) {
			seed = seed * 6364136223846793005UL + 1442695040888963407UL;
			code[i] = (unsigned char)((seed >> 33) % (NOPS - 1));
		}
		code[4000] = NOPS - 1;
		sum += run(code, (unsigned long)round);
		printf("round %d: %lu\n", round, sum);
	}
	return 0;
}
