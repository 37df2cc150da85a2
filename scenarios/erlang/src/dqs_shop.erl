%% The traced scenario's shop: plain Erlang functions with no probe in them, except the
%% hand-written span around the whole request (checkout). dqd's config binds the other
%% probes of traced.dq to these functions ({"mfa": "dqs_shop:stock/0"}); the wrapper
%% times a function only while dqd has its probe enabled. Each leaf does the work
%% scenario.terms gives it (dqs_scenario:leaf/1: a sleep, with the runner's faults).
-module(dqs_shop).

-export([checkout/0]).

checkout() ->
    dqd_wrapper:with_span(<<"checkout">>, fun() ->
                                                  frontend(),
                                                  orders(),
                                                  payment()
                                          end).

frontend() ->
    parse(),
    session(),
    ok.

orders() ->
    stock(),
    price(),
    ok.

payment() ->
    card(),
    receipt(),
    ok.

parse() -> dqs_scenario:leaf(<<"parse">>).
session() -> dqs_scenario:leaf(<<"session">>).
stock() -> dqs_scenario:leaf(<<"stock">>).
price() -> dqs_scenario:leaf(<<"price">>).
card() -> dqs_scenario:leaf(<<"card">>).
receipt() -> dqs_scenario:leaf(<<"receipt">>).
