(* A small Rocq file for the rocq session's proof cursor (examples/rocq.json):
   rocq_cursor_init {"file": "rocq/Demo.v"} enters the first Admitted goal. *)
Require Import Arith.

Lemma add_zero_right : forall n : nat, n + 0 = n.
Proof.
Admitted.

Lemma add_comm_demo : forall a b : nat, a + b = b + a.
Proof.
  intros a b. apply Nat.add_comm.
Qed.
