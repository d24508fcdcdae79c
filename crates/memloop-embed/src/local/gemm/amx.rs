//! The AMX path: weights re-laid once at load into bfloat16 tiles, activations
//! rounded to bfloat16 at each product, `tdpbf16ps` accumulating in f32.
//!
//! A tile is 16 rows of 64 bytes. `tdpbf16ps c, a, b` adds to the 16×16 f32
//! tile c the product of a (16 rows × 32 bfloat16 along k: row-major
//! activations as they are) and b (32 × 16 along k × n, stored as 16 rows
//! of k-pairs: row r holds, for each of the 16 columns, the values at k = 2r
//! and 2r + 1). The kernel keeps 2 × 2 accumulator tiles (32 rows × 32
//! columns of c), so each loaded tile of a or b feeds two products.
//!
//! The tile unit needs the kernel's leave: `arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)`, asked once per process, after which every thread
//! may use it.

use std::ops::Range;

use super::{split_columns, to_bf16, KEEP_BYTES};

/// Rows of a tile.
const ROWS: usize = 16;
/// bfloat16 values along k in one tile row (64 bytes).
const KPER: usize = 32;
/// f32 columns of an accumulator tile.
const COLS: usize = 16;
/// Columns of c one kernel step covers (two accumulator tiles).
const PAIR: usize = 2 * COLS;

/// One 64-byte tile row, cache-line aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Line([u16; KPER]);

/// A `k × n` weight matrix in bfloat16 tiles: for each block of 16 columns,
/// for each block of 32 along k, one tile (16 lines) in the layout b above.
pub struct Tiles {
    k: usize,
    pub n: usize,
    lines: Vec<Line>,
}

impl Tiles {
    /// Lays out `w` (k × n, row-major); None unless k is a multiple of 32
    /// and n of 32.
    pub fn new(w: &[f32], k: usize, n: usize) -> Option<Tiles> {
        if k == 0 || !k.is_multiple_of(KPER) || !n.is_multiple_of(PAIR) || w.len() != k * n {
            return None;
        }
        let mut lines = Vec::with_capacity(n / COLS * k / KPER * ROWS);
        for nb in 0..n / COLS {
            for kb in 0..k / KPER {
                for r in 0..ROWS {
                    let mut line = Line([0; KPER]);
                    for j in 0..COLS {
                        for e in 0..2 {
                            line.0[2 * j + e] =
                                to_bf16(w[(kb * KPER + 2 * r + e) * n + nb * COLS + j]);
                        }
                    }
                    lines.push(line);
                }
            }
        }
        Some(Tiles { k, n, lines })
    }
}

/// True when the CPU has AMX-TILE and AMX-BF16 (with AVX512-BF16, for the
/// rounding of activations) and the kernel grants this process the tile
/// state. Asked once per process.
pub fn available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| cpu_has_amx() && request_permission())
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn cpu_has_amx() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    if __cpuid(0).eax < 7 {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    let (amx_bf16, amx_tile) = (1 << 22, 1 << 24);
    edx & amx_bf16 != 0 && edx & amx_tile != 0 && super::bf16::available()
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn cpu_has_amx() -> bool {
    false
}

/// `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`: true when granted.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_permission() -> bool {
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: u64 = 0x1023;
    const XFEATURE_XTILEDATA: u64 = 18;
    let ret: i64;
    // SAFETY: this system call only asks the kernel to let this process's
    // threads use the AMX tile state; it reads and writes none of our memory.
    // `syscall` overwrites rcx and r11, declared as clobbered; no stack use.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret == 0
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn request_permission() -> bool {
    false
}

/// c[m × n] += a[m × k] · t, or with a `bias` (n values) c = a · t + bias,
/// with a row-major at stride k and c at stride n, the column pairs shared
/// among `threads`. False (doing nothing) when the slices do not fit or AMX
/// is unavailable.
pub fn product(
    a: &[f32],
    m: usize,
    t: &Tiles,
    bias: Option<&[f32]>,
    c: &mut [f32],
    threads: usize,
) -> bool {
    if a.len() < m * t.k || c.len() < m * t.n || bias.is_some_and(|b| b.len() < t.n) || !available()
    {
        return false;
    }
    if m == 0 {
        return true;
    }
    let mut a16 = A_TILES.take();
    to_tiles(&a[..m * t.k], m, t.k, &mut a16);
    // One text's product (up to 16 rows) takes tens of microseconds on the
    // tile unit, less than waking a second thread and copying its columns
    // back: one text embeds faster on one core (1.8-2.1 ms against 2.3-2.5
    // ms on two, interleaved runs of gemm_ab).
    let threads = if m <= ROWS { 1 } else { threads };
    let done = split_columns(m, t.n, PAIR, t.n / PAIR, threads, c, |pairs, part, ldc| {
        // SAFETY: `available()` held above (AMX granted); `a16` holds k/32
        // tiles for each block of 16 of m rows rounded up to 32
        // (`to_tiles`); `pairs` lies within t's n/32 pairs and `part` is m
        // rows of `ldc` ≥ 32·pairs.len() columns (`split_columns`); a bias
        // holds t.n values (checked above).
        #[cfg(target_arch = "x86_64")]
        unsafe {
            kernel(&a16, m, t, bias, pairs, part, ldc)
        }
    });
    if a16.capacity() * std::mem::size_of::<Line>() <= KEEP_BYTES {
        A_TILES.set(a16);
    }
    done
}

thread_local! {
    static A_TILES: std::cell::Cell<Vec<Line>> = const { std::cell::Cell::new(Vec::new()) };
}

/// a (m × k) rounded to bfloat16 in tile order, into `lines`: for each
/// block of 16 rows, for each block of 32 along k, one tile (16 lines, row
/// r's 32 values in line r), so that every tile load reads 1 KiB in one run.
/// Room is left for rows up to a multiple of 32, never loaded (the kernel's
/// last block is configured for the rows it has), so never cleared either.
fn to_tiles(a: &[f32], m: usize, k: usize, lines: &mut Vec<Line>) {
    lines.resize(m.next_multiple_of(2 * ROWS) * (k / KPER), Line([0; KPER]));
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()`, checked before any product, includes
        // AVX-512F and AVX512-BF16.
        unsafe { fill_tiles(&a[..m * k], k, lines) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, k);
}

/// Rows of `a` (`k` values each) into `lines` in the order of `to_tiles`,
/// 32 values per `vcvtne2ps2bf16` (round to nearest even; the low half of
/// the line from the first 16).
///
/// # Safety
/// The CPU must support AVX-512F and AVX512-BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn fill_tiles(a: &[f32], k: usize, lines: &mut [Line]) {
    let kbs = k / KPER;
    for (r, row) in a.chunks_exact(k).enumerate() {
        let first = (r / ROWS) * kbs * ROWS + r % ROWS;
        for (kb, chunk) in row.chunks_exact(KPER).enumerate() {
            let Some(dst) = lines.get_mut(first + kb * ROWS) else {
                return;
            };
            // SAFETY: `chunk` holds 32 f32 (128 bytes read), `dst` is one
            // 64-byte line (written); the features are this function's.
            std::arch::asm!(
                "vmovups {lo}, [{src}]",
                "vmovups {hi}, [{src} + 64]",
                "vcvtne2ps2bf16 {lo}, {hi}, {lo}",
                "vmovdqu16 [{dst}], {lo}",
                src = in(reg) chunk.as_ptr(),
                dst = in(reg) dst.0.as_mut_ptr(),
                lo = out(zmm_reg) _,
                hi = out(zmm_reg) _,
                options(nostack),
            );
        }
    }
}

/// A tile configuration (palette 1): every tile 64 bytes wide; rows as set.
#[repr(C, align(64))]
struct Config([u8; 64]);

impl Config {
    /// Tiles 0, 1 and 4 (c and a for the first 16 rows of a block) get
    /// `low` rows, tiles 2, 3 and 5 (the next 16) `high`; b's tiles 6 and 7
    /// always 16 (k-pairs). So the last block of a product, of fewer than
    /// 32 rows, loads and stores only the rows c has.
    fn rows(low: usize, high: usize) -> Config {
        let mut c = [0u8; 64];
        c[0] = 1;
        for (t, rows) in [low, low, high, high, low, high, ROWS, ROWS]
            .into_iter()
            .enumerate()
        {
            // A tile of no rows must be of no bytes too (it is unused).
            let width: u16 = if rows == 0 { 0 } else { 64 };
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&width.to_le_bytes());
            c[48 + t] = rows.min(ROWS) as u8;
        }
        Config(c)
    }

    /// The configuration for a block of `rows` (1..=32) rows.
    fn block(rows: usize) -> Config {
        Config::rows(rows.min(ROWS), rows.saturating_sub(ROWS))
    }
}

/// Blocks of 32 along k one pass over c covers: 12 (k = 384) keeps a block
/// of 32 rows of a (2 × 12 tiles, 24 KiB) in L1 while every column pair
/// streams past it, for any k.
const K_CHUNK: usize = 12;

/// Steps (blocks of 32 along k) ahead that the few-rows loop prefetches b.
const PREFETCH: usize = 6;

/// Asks for the 16 lines of the tile at `p` in L1.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_tile(p: *const Line) {
    // SAFETY: prefetcht0 reads nothing into the program and never faults,
    // whatever the address.
    unsafe {
        std::arch::asm!(
            "prefetcht0 [{p}]",
            "prefetcht0 [{p} + 64]",
            "prefetcht0 [{p} + 128]",
            "prefetcht0 [{p} + 192]",
            "prefetcht0 [{p} + 256]",
            "prefetcht0 [{p} + 320]",
            "prefetcht0 [{p} + 384]",
            "prefetcht0 [{p} + 448]",
            "prefetcht0 [{p} + 512]",
            "prefetcht0 [{p} + 576]",
            "prefetcht0 [{p} + 640]",
            "prefetcht0 [{p} + 704]",
            "prefetcht0 [{p} + 768]",
            "prefetcht0 [{p} + 832]",
            "prefetcht0 [{p} + 896]",
            "prefetcht0 [{p} + 960]",
            p = in(reg) p,
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// Column pairs `pairs` of t over all m rows into c (whose column 0 is pair
/// `pairs.start`). Tiles 0–3 accumulate, 4–5 hold a, 6–7 hold b. With a
/// bias, the first chunk along k starts the accumulators from it instead
/// of from c: a tile load with a row stride of 0 reads the same 16 bias
/// values into every row.
///
/// The loops run k in chunks of K_CHUNK blocks; within a chunk, each block
/// of 32 rows of a (in L1) meets every column pair of b (in L2), c's tiles
/// loaded before and stored after each pair's chunk.
///
/// # Safety
/// AMX must be granted (`available()`). `a` must be `to_tiles` of m rows
/// and t.k columns; `pairs` must lie within `0..t.n / 32`; c must hold
/// `(m - 1) · ldc + 32 · pairs.len()` values with `ldc ≥ 32 · pairs.len()`;
/// a bias must hold t.n values. The tile loads and stores use raw pointers.
#[cfg(target_arch = "x86_64")]
unsafe fn kernel(
    a: &[Line],
    m: usize,
    t: &Tiles,
    bias: Option<&[f32]>,
    pairs: Range<usize>,
    c: &mut [f32],
    ldc: usize,
) {
    use std::arch::asm;
    // SAFETY (for each asm block below): the caller's contract bounds every
    // address: a tiles for rows r0..r0 + 32 exist (padding), b tiles lie
    // within t.lines, and c's rows r0..r0 + rows exist, the configuration
    // loading and storing no more rows than that. The tile registers are not
    // used by compiled code, so state kept in them between blocks is
    // undisturbed.
    let full = Config::block(2 * ROWS);
    let tail = Config::block(m % (2 * ROWS));
    let configure = |cfg: &Config| {
        asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    };
    configure(&full);
    let kbs = t.k / KPER;
    let tile = ROWS; // lines per tile
    let line = 64usize;
    let cs = ldc * 4; // c's row stride in bytes
    for k0 in (0..kbs).step_by(K_CHUNK) {
        let k1 = (k0 + K_CHUNK).min(kbs);
        let mut r0 = 0;
        while r0 < m {
            let rows = (m - r0).min(2 * ROWS);
            if rows < 2 * ROWS {
                configure(&tail);
            }
            // a's tiles for rows r0.. and r0 + 16.., at block k0.
            let a0 = a.as_ptr().add((r0 / ROWS * kbs + k0) * tile);
            let a1 = a0.add(kbs * tile);
            for (i, p) in pairs.clone().enumerate() {
                let b0 = t.lines.as_ptr().add((2 * p * kbs + k0) * tile);
                let b1 = b0.add(kbs * tile);
                let c0 = c.as_mut_ptr().add(r0 * ldc + PAIR * i);
                let c1 = c0.add(COLS);
                // Rows r0 + 16.. (used only when the block has them).
                let c2 = c0.wrapping_add(ROWS * ldc);
                let c3 = c2.wrapping_add(COLS);
                // Where the accumulators start from: c, or the bias of
                // these 32 columns for every row (stride 0).
                let (s0, s1, s2, s3, ss) = match bias {
                    Some(bias) if k0 == 0 => {
                        let b = bias.as_ptr().add(PAIR * p);
                        (b, b.add(COLS), b, b.add(COLS), 0usize)
                    }
                    _ => (
                        c0.cast_const(),
                        c1.cast_const(),
                        c2.cast_const(),
                        c3.cast_const(),
                        cs,
                    ),
                };
                if rows > ROWS {
                    asm!(
                        "tileloadd tmm0, [{s0} + {ss}*1]",
                        "tileloadd tmm1, [{s1} + {ss}*1]",
                        "tileloadd tmm2, [{s2} + {ss}*1]",
                        "tileloadd tmm3, [{s3} + {ss}*1]",
                        s0 = in(reg) s0, s1 = in(reg) s1, s2 = in(reg) s2, s3 = in(reg) s3,
                        ss = in(reg) ss,
                        options(nostack, readonly),
                    );
                    for kb in 0..k1 - k0 {
                        asm!(
                            "tileloadd tmm4, [{a0} + {s}*1]",
                            "tileloadd tmm6, [{b0} + {s}*1]",
                            "tileloadd tmm7, [{b1} + {s}*1]",
                            "tdpbf16ps tmm0, tmm4, tmm6",
                            "tileloadd tmm5, [{a1} + {s}*1]",
                            "tdpbf16ps tmm1, tmm4, tmm7",
                            "tdpbf16ps tmm2, tmm5, tmm6",
                            "tdpbf16ps tmm3, tmm5, tmm7",
                            a0 = in(reg) a0.add(kb * tile), a1 = in(reg) a1.add(kb * tile),
                            b0 = in(reg) b0.add(kb * tile), b1 = in(reg) b1.add(kb * tile),
                            s = in(reg) line,
                            options(nostack, readonly),
                        );
                    }
                    asm!(
                        "tilestored [{c0} + {cs}*1], tmm0",
                        "tilestored [{c1} + {cs}*1], tmm1",
                        "tilestored [{c2} + {cs}*1], tmm2",
                        "tilestored [{c3} + {cs}*1], tmm3",
                        c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                        cs = in(reg) cs,
                        options(nostack),
                    );
                } else {
                    // At most 16 rows left (a query): half the tiles, half the work.
                    asm!(
                        "tileloadd tmm0, [{s0} + {ss}*1]",
                        "tileloadd tmm1, [{s1} + {ss}*1]",
                        s0 = in(reg) s0, s1 = in(reg) s1, ss = in(reg) ss,
                        options(nostack, readonly),
                    );
                    for kb in 0..k1 - k0 {
                        // Few rows do little arithmetic per byte of b, so
                        // b's tiles come from L3 as fast as they can be
                        // asked for: ask PREFETCH steps ahead. (A prefetch
                        // never faults, so past the end it is harmless.)
                        prefetch_tile(b0.wrapping_add((kb + PREFETCH) * tile));
                        prefetch_tile(b1.wrapping_add((kb + PREFETCH) * tile));
                        asm!(
                            "tileloadd tmm4, [{a0} + {s}*1]",
                            "tileloadd tmm6, [{b0} + {s}*1]",
                            "tileloadd tmm7, [{b1} + {s}*1]",
                            "tdpbf16ps tmm0, tmm4, tmm6",
                            "tdpbf16ps tmm1, tmm4, tmm7",
                            a0 = in(reg) a0.add(kb * tile),
                            b0 = in(reg) b0.add(kb * tile), b1 = in(reg) b1.add(kb * tile),
                            s = in(reg) line,
                            options(nostack, readonly),
                        );
                    }
                    asm!(
                        "tilestored [{c0} + {cs}*1], tmm0",
                        "tilestored [{c1} + {cs}*1], tmm1",
                        c0 = in(reg) c0, c1 = in(reg) c1, cs = in(reg) cs,
                        options(nostack),
                    );
                }
            }
            if rows < 2 * ROWS {
                configure(&full);
            }
            r0 += rows;
        }
    }
    asm!("tilerelease", options(nostack, nomem));
}
