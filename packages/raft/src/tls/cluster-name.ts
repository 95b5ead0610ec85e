/**
 * The DNS name in the cluster certificate's SAN, and the name every node checks the server
 * certificate against when it dials a peer (gRPC's target name override). Node addresses are
 * therefore never in a certificate: a node can move to a new address, or join with one the
 * certificate's issuer never heard of, without a new certificate.
 */
export const CLUSTER_SERVER_NAME = 'strongroom-cluster';
