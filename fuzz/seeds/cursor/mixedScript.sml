(* OK, FAILED and placeholder blocks, and a proof to ask the state in
   (tests/cursor_hol4.rs). *)
open HolKernel Parse boolLib bossLib;

val _ = new_theory "mixed";

Theorem broken:
  1 + 1 = 3
Proof
  simp []
QED

Theorem uses_broken:
  1 + 1 = 3
Proof
  ACCEPT_TAC broken
QED

Theorem left_open:
  !n:num. n = n
Proof
  cheat
QED

Theorem swap:
  !a b:num. a + b = b + a /\ T
Proof
  rpt GEN_TAC >>
  CONJ_TAC
  >- simp [arithmeticTheory.ADD_COMM]
  >- simp []
QED

val _ = export_theory ();
