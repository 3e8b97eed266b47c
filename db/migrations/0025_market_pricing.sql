-- Market averages (pricing = 'market', e.g. SF Compute's daily average per GPU type) are not
-- list prices: they describe a market on a day. `price_date` is the day an average is for;
-- NULL for every on-demand and spot price. Market rows are left out of "cheapest" answers
-- (`prices`, `advise`, alerts, digests) unless asked for.
ALTER TABLE core.price_intervals ADD COLUMN price_date DATE;
