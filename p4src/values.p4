/*
 * values.p4 -- AGG_FOR_EACH_VALUE(M): expands M(0) M(1) ... M(AGG_K - 1).
 *
 * P4-16 has no loops over fields, so the per-value header fields, register arrays and
 * value-processor instances are all written once as a macro M(i) and expanded here for
 * i = 0 .. AGG_K-1; AGG_K must be a power of two up to 64.
 */
#ifndef AGG_VALUES_P4
#define AGG_VALUES_P4

#define AGG_FOR_EACH_1(M) M(0)
#define AGG_FOR_EACH_2(M) AGG_FOR_EACH_1(M) \
    M(1)
#define AGG_FOR_EACH_4(M) AGG_FOR_EACH_2(M) \
    M(2) M(3)
#define AGG_FOR_EACH_8(M) AGG_FOR_EACH_4(M) \
    M(4) M(5) M(6) M(7)
#define AGG_FOR_EACH_16(M) AGG_FOR_EACH_8(M) \
    M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define AGG_FOR_EACH_32(M) AGG_FOR_EACH_16(M) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) \
    M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define AGG_FOR_EACH_64(M) AGG_FOR_EACH_32(M) \
    M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) \
    M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) \
    M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

#if AGG_K == 1
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_1(M)
#elif AGG_K == 2
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_2(M)
#elif AGG_K == 4
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_4(M)
#elif AGG_K == 8
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_8(M)
#elif AGG_K == 16
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_16(M)
#elif AGG_K == 32
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_32(M)
#elif AGG_K == 64
#define AGG_FOR_EACH_VALUE(M) AGG_FOR_EACH_64(M)
#else
#error "AGG_K must be 1, 2, 4, 8, 16, 32 or 64"
#endif

#endif
