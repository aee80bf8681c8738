; unsat.smt2 -- a small unsatisfiable problem, written for the stdmcp examples.
; No integer is both even and odd: x = 2a and x = 2b + 1 has no integer solution.
; Expected: z3 prints "unsat"; exit code 0.
(set-logic QF_LIA)
(declare-const x Int)
(declare-const a Int)
(declare-const b Int)
(assert (= x (* 2 a)))
(assert (= x (+ (* 2 b) 1)))
(check-sat)
