% group_identity.p -- a small group-theory theorem, written for the stdmcp examples.
% Axioms: associativity, a left identity e and left inverses inv(X).
% Conjecture: e is also a right identity, i.e. X*e = X for all X.
% Expected: eprover --auto proves it in well under a second.
%   stdout contains "# SZS status Theorem"; exit code 0.
fof(associativity, axiom, ![X,Y,Z] : mult(mult(X,Y),Z) = mult(X,mult(Y,Z))).
fof(left_identity, axiom, ![X] : mult(e,X) = X).
fof(left_inverse, axiom, ![X] : mult(inv(X),X) = e).
fof(right_identity, conjecture, ![X] : mult(X,e) = X).
