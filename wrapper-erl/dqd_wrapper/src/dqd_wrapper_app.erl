%% Application callback of the dqd wrapper. prep_stop/1 runs before the supervision
%% tree is taken down, so reporting stops and overdue instances are swept while the
%% connection can still send them.
-module(dqd_wrapper_app).
-behaviour(application).

-export([start/2, prep_stop/1, stop/1]).

start(_Type, _Args) ->
    dqd_wrapper_sup:start_link(dqd_wrapper_config:load()).

prep_stop(State) ->
    catch dqd_wrapper_core:quiesce(),
    State.

stop(_State) ->
    ok.
