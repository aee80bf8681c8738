% socrates.p -- the classic syllogism, written for the stdmcp examples.
% All men are mortal; Socrates is a man; therefore Socrates is mortal.
% Expected: eprover --auto proves it in milliseconds.
%   stdout contains "# Proof found!" and "# SZS status Theorem"; exit code 0.
fof(all_men_are_mortal, axiom, ![X] : (man(X) => mortal(X))).
fof(socrates_is_a_man, axiom, man(socrates)).
fof(socrates_is_mortal, conjecture, mortal(socrates)).
