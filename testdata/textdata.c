/*
 * textdata.c - a table of constants in .text, reached only by lea.
 *
 * Hand-written assembly keeps its constants beside its code: OpenSSL's
 * SHA-256 reads K256 from .text, and its SHA-NI variant starts at
 * K256+128. In a stripped binary such an address looks like a function
 * entry (an address taken by code), and whatever the rewriter writes
 * there (an entry jump) corrupts the data: the program computes wrong
 * results. The copy must print what the original prints.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

/* The SHA-256 round constants [FIPS 180-4 4.2.2], in .text, with no
 * symbol type, size or unwind entry, as perlasm writes them. */
__asm__(".text\n"
	".balign 64\n"
	"k_table:\n"
	".long 0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5\n"
	".long 0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174\n"
	".long 0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da\n"
	".long 0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967\n"
	".long 0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85\n"
	".long 0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070\n"
	".long 0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3\n"
	".long 0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2\n"
	".previous\n");
extern const unsigned int k_table[64];

/* A table whose bytes decode as ordinary code (nops, then a return):
 * only the way the program reads it tells it is data. */
__asm__(".text\n"
	".balign 64\n"
	"nop_table:\n"
	".long 0x90909090,0x90909090,0x90909090,0x90909090,0x90909090,0x90909090,0x90909090,0xc3909090\n"
	".previous\n");
extern const unsigned int nop_table[8];

/* A table a pointer in data names (BoringSSL's FIPS module keeps its
 * read-only data in .text and points at it from data): its first bytes
 * decode, then comes a byte that does not (0x06 is no instruction in
 * 64-bit mode). */
__asm__(".text\n"
	".balign 16\n"
	"bad_table:\n"
	".byte 0x90,0x90,0x90,0x90,0x90,0x90,0x06,0x07,0x11,0x22,0x33,0x44,0x55,0x66,0x77,0x88\n"
	".previous\n");
extern const unsigned char bad_table[16];
const unsigned char *volatile bad_ptr = bad_table;

/* A table that decodes as a procedure reading its caller's carry flag
 * (adc %eax,%eax; nops; ret), reached only through a callee: such a
 * procedure is left out, and its entry must not be counted by a jump
 * written over it (libcrypto's AES tables). */
__asm__(".text\n"
	".balign 16\n"
	"flags_table:\n"
	".byte 0x11,0xc0,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90,0xc3\n"
	".previous\n");
extern const unsigned int flags_table[4];

volatile int vol_n = 64;

/* Reads the table from its start and from its middle, each address
 * taken by a lea of its own. */
NOINLINE unsigned mix(const unsigned *k, int n)
{
	unsigned h = 0x6a09e667;
	for (int i = 0; i < n; i++)
		h = (h << 5 | h >> 27) ^ k[i];
	return h;
}

/* Reads the table's last quarter through the register its lea loads,
 * as OpenSSL's SHA-256 reads K256. */
NOINLINE unsigned tail_sum(int n)
{
	const unsigned *k = k_table + 48;
	unsigned h = 0;
	for (int i = 0; i < n; i++)
		h += k[i] ^ (h >> 3);
	return h;
}

/* Sums the nop table through the register its lea loads. */
NOINLINE unsigned nop_sum(int n)
{
	const unsigned *t = nop_table;
	unsigned h = 0;
	for (int i = 0; i < n; i++)
		h = h * 31 + t[i];
	return h;
}

/* Sums a table through the pointer in data. */
NOINLINE unsigned ptr_sum(void)
{
	const unsigned char *t = bad_ptr;
	unsigned h = 0;
	for (int i = 0; i < 16; i++)
		h = h * 33 + t[i];
	return h;
}

int main(void)
{
	printf("%08x\n", mix(k_table, vol_n));
	printf("%08x\n", mix(k_table + 32, vol_n / 2));
	printf("%08x\n", mix(k_table + 16, vol_n / 4));
	printf("%08x\n", tail_sum(vol_n / 4));
	printf("%08x\n", nop_sum(vol_n / 8));
	printf("%08x\n", ptr_sum());
	printf("%08x\n", mix(flags_table, 4));
	return 0;
}
