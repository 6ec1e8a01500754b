(* w.ml - the OCaml workload of TestWholeProcessShare and
   TestWholeProcessSameRun (cmd/blpp): maps, lists, hash tables, variants,
   exceptions, closures. w.byte is this file compiled by Debian 12's
   ocamlc 4.13.1 (ocamlc -o w.byte w.ml), run by ocamlrun. *)
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)
module M = Map.Make (String)
type shape = Circle of float | Rect of float * float
let area = function Circle r -> 3.0 *. r *. r | Rect (w, h) -> w *. h
exception Odd of int
let () =
  let m = ref M.empty in
  for i = 0 to 3000 do m := M.add (string_of_int (i * 7919 mod 10007)) i !m done;
  let l = List.init 5000 (fun i -> i * 7919 mod 10007) in
  let s = List.sort compare l in
  let h = Hashtbl.create 16 in
  List.iter (fun x -> Hashtbl.replace h (x mod 500) x) s;
  let shapes = List.init 2000 (fun i -> if i mod 3 = 0 then Circle (float i) else Rect (float i, 2.0)) in
  let odd = ref 0 in
  for i = 1 to 300 do try if i mod 2 = 1 then raise (Odd i) with Odd _ -> incr odd done;
  let b = Buffer.create 16 in
  for i = 0 to 2000 do Buffer.add_string b (string_of_int i) done;
  Printf.printf "%d %d %d %d %.1f %d %d\n" (fib 18) (M.cardinal !m) (Hashtbl.length h)
    (List.fold_left ( + ) 0 s) (List.fold_left (fun a x -> a +. area x) 0.0 shapes) !odd (Buffer.length b)
