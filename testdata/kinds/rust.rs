// rust.rs - a small Rust program: iterator chains, a HashMap (with a fixed
// hasher, so that every run hashes alike), a panic caught by
// std::panic::catch_unwind (unwinding through instrumented frames), and
// formatted output.
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::collections::hash_map::DefaultHasher;

#[inline(never)]
fn collatz(mut n: u64) -> u32 {
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

#[inline(never)]
fn histogram(words: &[&str]) -> Vec<(String, usize)> {
    let mut m: HashMap<String, usize, BuildHasherDefault<DefaultHasher>> = HashMap::default();
    for w in words {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort();
    v
}

#[inline(never)]
fn checked(depth: u32, x: i64) -> i64 {
    if depth == 0 {
        if x > 40 {
            panic!("x too big: {}", x);
        }
        return x * 2;
    }
    checked(depth - 1, x + 1) + 1
}

fn main() {
    let total: u32 = (1..30u64).map(collatz).filter(|s| s % 2 == 0).sum();
    let squares: Vec<u64> = (0..10u64).map(|x| x * x).rev().collect();
    println!("collatz even-step total {}, squares {:?}", total, squares);

    let text = "the quick brown fox jumps over the lazy dog the fox";
    let words: Vec<&str> = text.split(' ').collect();
    for (w, n) in histogram(&words) {
        println!("{} {}", w, n);
    }

    std::panic::set_hook(Box::new(|info| {
        eprintln!("caught: {}", info);
    }));
    for x in [1i64, 50, 7] {
        match std::panic::catch_unwind(|| checked(3, x)) {
            Ok(v) => println!("checked({}) = {}", x, v),
            Err(_) => println!("checked({}) panicked", x),
        }
    }
}
