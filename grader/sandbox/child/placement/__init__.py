"""The device-placement checks, worker side: the submission's code run on another device
(meta, a device that holds values, CUDA) and watched for CPU tensors (their grader side:
grader.suite.placement)."""
