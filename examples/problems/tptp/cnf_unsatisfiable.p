% cnf_unsatisfiable.p -- clauses without a conjecture that contradict each other, written for
% the stdmcp examples. Every man is mortal, Socrates is a man, Socrates is not mortal (the
% negated conjecture, as a clause: a CNF problem has no conjecture, so its SZS status is
% Unsatisfiable, not Theorem).
% Expected: eprover --auto finds the refutation in milliseconds:
%   "# SZS status Unsatisfiable"; exit code 0. SPASS -TPTP: "SPASS beiseite: Proof found.".
cnf(all_men_are_mortal, axiom, ~man(X) | mortal(X)).
cnf(socrates_is_a_man, axiom, man(socrates)).
cnf(socrates_is_not_mortal, negated_conjecture, ~mortal(socrates)).
