% cnf_satisfiable.p -- clauses without a conjecture that have a model, written for the stdmcp
% examples. Every man is mortal, Socrates is a man, Plato is not mortal (nothing says Plato is
% a man: a CNF problem has no conjecture, so its SZS status is Satisfiable, not
% CounterSatisfiable).
% Expected: eprover --auto saturates in milliseconds: "# SZS status Satisfiable"; exit code 1.
%   SPASS -TPTP: "SPASS beiseite: Completion found.".
cnf(all_men_are_mortal, axiom, ~man(X) | mortal(X)).
cnf(socrates_is_a_man, axiom, man(socrates)).
cnf(plato_is_not_mortal, axiom, ~mortal(plato)).
