% transitivity.p -- a small ordering puzzle, written for the stdmcp examples.
% "older than" is transitive; ann is older than bob, bob than cid, cid than dan.
% Conjecture: ann is older than dan, and dan is not older than ann
% (using irreflexivity).
% Expected: eprover --auto proves it in milliseconds.
%   stdout contains "# SZS status Theorem"; exit code 0.
fof(transitive, axiom, ![X,Y,Z] : ((older(X,Y) & older(Y,Z)) => older(X,Z))).
fof(irreflexive, axiom, ![X] : ~ older(X,X)).
fof(fact_1, axiom, older(ann,bob)).
fof(fact_2, axiom, older(bob,cid)).
fof(fact_3, axiom, older(cid,dan)).
fof(goal, conjecture, (older(ann,dan) & ~ older(dan,ann))).
