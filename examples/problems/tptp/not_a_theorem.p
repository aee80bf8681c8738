% not_a_theorem.p -- a conjecture that does NOT follow, written for the stdmcp examples.
% All men are mortal and Socrates is mortal, but that does not make
% Socrates a man (affirming the consequent).
% Expected: eprover --auto saturates in milliseconds without finding a proof.
%   stdout contains "# No proof found!" and "# SZS status CounterSatisfiable";
%   exit code 1.
fof(all_men_are_mortal, axiom, ![X] : (man(X) => mortal(X))).
fof(socrates_is_mortal, axiom, mortal(socrates)).
fof(socrates_is_a_man, conjecture, man(socrates)).
