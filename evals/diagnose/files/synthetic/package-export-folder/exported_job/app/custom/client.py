# training script (placeholder for an exported job; config_fed_client.json is missing on purpose)
print('train')
