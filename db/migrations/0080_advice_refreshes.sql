-- Every advice refresh takes a number from this sequence inside its transaction. In a DuckDB
-- file that changes nothing (one writer at a time). On a lake it is one counter row that every
-- refresh updates, so two daemons refreshing at once change the same row and the lake refuses
-- the second commit, which then runs again on the first one's rows: without it, two refreshes
-- of an empty advice table both delete nothing, both insert, and every ranking is stored twice.
CREATE SEQUENCE core.advice_refreshes START 1;
