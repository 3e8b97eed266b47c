-- What each catalog model is: 'gpu' or 'accelerator' (TPU, Gaudi, Trainium, Inferentia), so
-- output can say "accelerator" where a model is not a GPU. Filled from providers/gpus.toml by the
-- catalog refresh at every start.
ALTER TABLE core.gpus ADD COLUMN kind VARCHAR;
