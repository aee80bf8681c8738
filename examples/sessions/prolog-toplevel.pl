% SWI-Prolog toplevel settings for a session driven over pipes (examples/repls.json, kind
% "prolog"); see docs/sessions-programs.md for why each one is needed.

% One answer line per query, no blank line after it.
:- set_prolog_flag(toplevel_extra_white_line, false).

% An uncaught error must not start the tracer (it would read its commands from stdin).
:- set_prolog_flag(debug_on_error, false).

% Over a pipe the toplevel reads ";" or "." for more answers from stdin, which would eat the
% next input: every query runs once (use findall/3 or forall/2 to see all solutions).
:- multifile user:expand_query/4.
user:expand_query(Goal, stdmcp_query(Goal), Bindings, Bindings).

stdmcp_query(Goal) :-
    setup_call_cleanup(nb_setval(stdmcp_busy, true),
                       once(Goal),
                       nb_setval(stdmcp_busy, false)).

% SIGINT stops the running query with an error (no "Action?" prompt, the toplevel carries on
% with the next input); between queries it is ignored, since an interrupt while the toplevel
% reads would end the process.
:- nb_setval(stdmcp_busy, false).
% Sent once as the session's startup input: installs the handler (the toplevel installs its
% own after loading files) and greets with the version.
stdmcp_init :-
    on_signal(int, _, stdmcp_interrupt),
    current_prolog_flag(version_data, swi(Major, Minor, Patch, _)),
    format("SWI-Prolog ~w.~w.~w~n", [Major, Minor, Patch]).

stdmcp_interrupt(Signal) :-
    (   nb_current(stdmcp_busy, true)
    ->  throw(error(signal(Signal, 2), context(stdmcp_interrupt/1, interrupted)))
    ;   true
    ).

% The answer sentinel: `stdmcp_end(Marker).` prints Marker in place of its own "true.".
:- nb_setval(stdmcp_marker, '').
:- multifile user:message_hook/3.
user:message_hook(query(yes(_, _, _)), query, _) :-
    nb_current(stdmcp_marker, Marker),
    Marker \== '',
    nb_setval(stdmcp_marker, ''),
    format(user_output, "~w~n", [Marker]),
    flush_output(user_output).

stdmcp_end(Marker) :-
    nb_setval(stdmcp_marker, Marker).
