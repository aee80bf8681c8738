(* A small HOL4 theory for the hol session example (examples/hol4.json): in a session started
   with workdir ".", `load "demoTheory";` needs it built first (run Holmake in this directory),
   or paste its proofs step by step with g/e. *)
open HolKernel Parse boolLib bossLib;

val _ = new_theory "demo";

Theorem add_zero_right:
  !n:num. n + 0 = n
Proof
  simp []
QED

Theorem double_even:
  !n:num. EVEN (2 * n)
Proof
  simp [arithmeticTheory.EVEN_DOUBLE]
QED

val _ = export_theory ();
