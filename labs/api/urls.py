from api.routers import ApiRouter
from labs.api.views import FulfilmentLocationViewSet

router = ApiRouter()
router.register("fulfilmentLocations", FulfilmentLocationViewSet, basename="fulfilment-location")

urlpatterns = router.urls
