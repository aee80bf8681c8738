; sat.smt2 -- a small satisfiable problem, written for the stdmcp examples.
; Find integers x, y and an 8-bit vector b with
;   x + y = 10, x - y = 4, x > 0, and b * 3 = 0x2d (45) in 8-bit arithmetic.
; Expected: z3 prints "sat" followed by a model (x = 7, y = 3, b = #x0f); exit code 0.
(set-logic ALL)
(declare-const x Int)
(declare-const y Int)
(declare-const b (_ BitVec 8))
(assert (= (+ x y) 10))
(assert (= (- x y) 4))
(assert (> x 0))
(assert (= (bvmul b #x03) #x2d))
(check-sat)
(get-model)
