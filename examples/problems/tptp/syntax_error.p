% syntax_error.p -- deliberately malformed input (missing closing parenthesis).
fof(broken, axiom, ![X] : (p(X) => q(X)).
