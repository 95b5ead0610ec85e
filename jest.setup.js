// No test may reach a cloud's link-local metadata address: SDKs are pointed at emulators with
// explicit credentials, and a test that exercises a metadata service sets its own endpoint.
process.env.AWS_EC2_METADATA_DISABLED = 'true';
process.env.METADATA_SERVER_DETECTION = 'none';
